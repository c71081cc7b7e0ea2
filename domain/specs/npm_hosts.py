"""npm git and URL specs: hosted-git-info 9 `fromUrl`, npa's `fromURL`/`setGitAttrs`, and the
WHATWG URL parsing they need.

`hosted(spec)` answers the question npa asks first: is this a GitHub/GitLab/Bitbucket/gist/
sourcehut repository, and if so with which `#committish`? Only enough of the URL standard is
kept to agree with Node on that and on whether `new URL()` throws (IDNA and IPv4/IPv6 host
syntax are not modelled: such URLs may come out `url` where Node throws; both are nameless).
Nothing here ever names a package.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from domain.specs.types import Parsed

# JavaScript's \s and String.prototype.trim() set (Python's differs: no U+FEFF, adds U+001C-1F).
JS_BLANK_CHARS = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    map(chr, range(0x2000, 0x200B))
)
_JS_BLANK = re.compile(f"[{re.escape(JS_BLANK_CHARS)}]")
_HOSTS = {  # domain -> (host, protocols hosted-git-info accepts there)
    "github.com": ("github", {"git", "http", "git+ssh", "git+https", "ssh", "https"}),
    "bitbucket.org": ("bitbucket", {"git+ssh", "git+https", "ssh", "https"}),
    "gitlab.com": ("gitlab", {"git+ssh", "git+https", "ssh", "https"}),
    "gist.github.com": ("gist", {"git", "git+ssh", "git+https", "ssh", "https"}),
    "git.sr.ht": ("sourcehut", {"git+ssh", "https"}),
}
_TARBALL_PAGES = {"bitbucket": "get", "gist": "raw", "sourcehut": "archive"}
_SHORTCUTS = {"github", "gitlab", "bitbucket", "gist", "sourcehut"}
_PROTOCOLS = _SHORTCUTS | {"git+ssh", "ssh", "git+https", "git", "http", "https", "git+http"}
_SPECIAL = {"http", "https", "ftp", "ws", "wss"}  # WHATWG special schemes (file: never gets here)
_C0_AND_SPACE = "".join(map(chr, range(0x21)))  # what the WHATWG URL parser trims
_OPAQUE_HOST_BAD = re.compile(r"[\x00\t\n\r #/:<>?@\[\\\]^|]")
_DOMAIN_BAD = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")

_GIT_SCHEMES = {"git", "git+http", "git+https", "git+rsync", "git+ftp", "git+file", "git+ssh"}
_GIT_SSH_SCP = re.compile(r"git\+ssh://([^:#]+:[^#]+(?:\.git)?)(?:#(.*))?", re.I | re.A | re.S)
_SCP_PORT = re.compile(r":[0-9]+(/|$)")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.DOTALL)
_QUERY_OR_FRAGMENT = re.compile(r"[?#]|\Z")
_URL_PARTS = re.compile(r"(//([^/?#]*))?([^?#]*)(?:\?[^#]*)?(?:#(.*))?", re.DOTALL)
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]*\]|[^\[\]:]*)(?::(.*))?", re.DOTALL)

Url = tuple[str, str, str, str]  # (scheme, host, path, fragment)


def hosted(spec: str) -> str | None:
    """The committish when hosted-git-info recognises a hosted repo, else None."""
    if not spec or not any(c in spec for c in ":/@"):
        # no scheme, scp address or owner/repo: _correct_protocol gives `//spec`, which neither
        # parse_url nor _correct_url can read
        return None
    url = _correct_protocol(f"github:{spec}" if _github_shorthand(spec) else spec)
    parsed = parse_url(url) or parse_url(_correct_url(url))
    if parsed is None:
        return None
    scheme, host, path, fragment = parsed
    parts: tuple[str | None, ...] | None
    if scheme in _SHORTCUTS:
        parts = _shortcut_parts(path, fragment)
    else:
        site = _HOSTS.get(host.removeprefix("www."))
        if site is None or scheme not in site[1]:
            return None
        parts = _extract(site[0], path, fragment)
    # hosted-git-info decodeURIComponent()s user, project and committish; a URIError means "not
    # hosted", and npa goes on to try the spec as a URL or a path
    if parts is None or not all(js_decodable(part) for part in parts if part):
        return None
    return unquote(parts[-1] or "")


def git_spec(committish: str) -> Parsed:
    """A git dependency: nameless, unless its #committish/semver/path parts conflict."""
    if not _git_attrs_ok(committish):
        return ("invalid", None, f"conflicting git #committish/semver/path parts: {committish!r}")
    return ("vcs", None, "a git repository; its name cannot be known before it is fetched")


def _git_attrs_ok(committish: str) -> bool:
    """npa `setGitAttrs`: at most one committish or semver range, at most one path; the range
    must decode. JavaScript truthiness: an empty committish does not count (`#::` is fine)."""
    commit = semver = subdir = ""
    for part in committish.split("::") if committish else ():
        if ":" not in part:
            if semver or commit:
                return False
            commit = part
            continue
        key, value = part.split(":")[:2]
        if key == "semver":
            if commit or semver or not js_decodable(value):
                return False
            semver = value
        elif key == "path":
            if subdir:
                return False
            subdir = f"/{value}"
    return True


def url_spec(spec: str) -> Parsed:
    """npa `fromURL`: git schemes are git, http(s) a tarball, others EUNSUPPORTEDPROTOCOL."""
    if spec.startswith("git+ssh:"):  # case-sensitive in npa; scp-style is git unless a port
        scp = _GIT_SSH_SCP.fullmatch(spec)
        if scp and not _SCP_PORT.search(scp.group(1)):
            return git_spec(scp.group(2) or "")
    elif spec.startswith("git+file://"):
        spec = spec.replace("\\", "/")
    parsed = parse_url(spec)
    if parsed is None:
        return ("invalid", None, f"not a valid URL: {spec!r}")
    scheme = parsed[0]
    if scheme in _GIT_SCHEMES:
        return git_spec(parsed[3])
    if scheme in ("http", "https"):
        return ("url", None, "a tarball URL; its name cannot be known before it is downloaded")
    return ("invalid", None, f"unsupported URL type {scheme + ':'!r} (npm rejects it)")


def _github_shorthand(arg: str) -> bool:
    """hosted-git-info `isGitHubShorthand` (`owner/repo#ref`), including its quirks: the slash
    may come after the '#' (`a#/b`), and only whitespace, '@', ':' and a second '/' *before*
    the first '#' disqualify."""
    hash_at = arg.find("#")
    slash = arg.find("/")
    space = _JS_BLANK.search(arg)

    def only_after_hash(index: int) -> bool:
        return index == -1 or -1 < hash_at < index

    before_hash = arg[:hash_at] if hash_at > -1 else arg
    return (
        only_after_hash(space.start() if space else -1)
        and slash > 0
        and not before_hash.endswith("/")
        and not arg.startswith(".")
        and only_after_hash(arg.find("@"))
        and only_after_hash(arg.find(":"))
        and only_after_hash(arg.find("/", slash + 1))
    )


def _correct_protocol(arg: str) -> str:
    colon = arg.find(":")
    if colon > -1 and (arg[:colon] in _PROTOCOLS or arg[colon : colon + 3] == "://"):
        return arg
    at = arg.find("@")
    if at > -1:
        return f"git+ssh://{arg}" if at > colon else arg
    return f"{arg[: colon + 1]}//{arg[colon + 1 :]}"


def _correct_url(url: str) -> str:
    """hosted-git-info `correctUrl`: scp-style `user@host:path` becomes `user@host/path`."""
    head = url.split("#", 1)[0]
    colon = head.rfind(":")
    if colon > head.rfind("@"):
        url = f"{url[:colon]}/{url[colon + 1 :]}"
    if ":" not in url.split("#", 1)[0] and "//" not in url:
        url = f"git+ssh://{url}"
    return url


def _shortcut_parts(path: str, fragment: str) -> tuple[str | None, ...]:
    """`github:user/repo#ref`: no check that user or repo exist, only that they decode."""
    path = path.removeprefix("/")
    path = path[path.find("@") + 1 :]
    user, _, project = path.rpartition("/")
    return (user or None, project, fragment or None)


def _extract(host: str, path: str, fragment: str) -> tuple[str | None, ...] | None:
    """Each host's `extract`: (user, project, committish) from the URL, or None (not a repo:
    archive and raw links are tarballs)."""
    parts = path.split("/")[1:]
    if host == "gitlab":
        if "/-/" in path[1:] or "/archive.tar.gz" in path[1:]:
            return None
        segments = path[1:].split("/")
        owner, repo = "/".join(segments[:-1]), segments[-1].removesuffix(".git")
        return (owner, repo, fragment) if owner and repo else None
    user, project, aux = (parts + [None, None, None])[:3]
    if host == "github" and aux:  # only /tree/<ref> is a clone; /archive/... is a tarball
        if aux != "tree":
            return None
        fragment = parts[3] if len(parts) > 3 else "undefined"  # decodeURIComponent(undefined)
    if aux is not None and aux == _TARBALL_PAGES.get(host):
        return None
    project = project.removesuffix(".git") if project else project
    if host == "gist":
        if not project:  # gist.github.com/<id> has no user
            return (None, user.removesuffix(".git"), fragment) if user else None
        return (user, project, fragment)
    return (user, project, fragment) if user and project else None


def js_decodable(text: str) -> bool:
    """decodeURIComponent would not throw: every '%' starts a %XX escape, and the escapes decode
    as UTF-8 (no overlong forms, surrogates or stray continuation bytes)."""
    if _BAD_PERCENT.search(text):
        return False
    try:
        for run in _PERCENT_RUN.findall(text):
            bytes.fromhex(run.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def parse_url(text: str) -> Url | None:
    """Just enough of WHATWG URL parsing: (scheme, host, path, fragment), or None where
    `new URL()` throws."""
    text = _TAB_OR_NEWLINE.sub("", text.strip(_C0_AND_SPACE))
    match = _SCHEME.fullmatch(text)
    if match is None:
        return None
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme in _SPECIAL:  # `https:x` and `https:/\\x` mean https://x; `\\` is `/` before ?/#
        rest = rest.lstrip("/\\")
        found = _QUERY_OR_FRAGMENT.search(rest)
        assert found is not None  # \Z always matches
        end = found.start()
        rest = "//" + rest[:end].replace("\\", "/") + rest[end:]
    match = _URL_PARTS.fullmatch(rest)
    assert match is not None  # every part is optional
    authority, path, fragment = match.group(2), match.group(3), match.group(4) or ""
    host = _host(scheme, authority)
    return None if host is None else (scheme, host, path, fragment)


def _host(scheme: str, authority: str | None) -> str | None:
    """The host as Node reports it (special schemes lower-cased), or None where URL() throws."""
    if authority is None:
        return ""
    at, host_port = authority.rpartition("@")[1:]
    match = _HOST_PORT.fullmatch(host_port)
    if match is None:
        return None
    host, port = match.group(1), match.group(2) or ""
    if port and (not port.isascii() or not port.isdigit() or int(port) > 65535):
        return None
    if not host and (at or match.group(2) is not None):  # `user@` or `:port` and no host
        return None
    if scheme in _SPECIAL:  # a domain: percent-decoded, then checked (IDNA is not modelled)
        host = unquote(host) if host[:1] != "[" else host
        return host.lower() if host and (host[0] == "[" or not _DOMAIN_BAD.search(host)) else None
    return host if host[:1] == "[" or not _OPAQUE_HOST_BAD.search(host) else None
