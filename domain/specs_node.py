"""npm install arguments (SPECS.md section 3): a small port of npm-package-arg's `npa()`.

With it come the pieces npa leans on: validate-npm-package-name's `validForOldPackages`, the
hosted-git-info shortcuts and hosts, and node-semver's loose `validRange` (only whether a
range is valid, not what it means). Returns (kind, name, detail) triples. Names are never
trimmed or case-folded: `" lodash"` is not `lodash`, and `Lodash` is another package.
"""

from __future__ import annotations

import re

from domain.specs_python import UNSAFE_CHARS

Parsed = tuple[str, "str | None", "str | None"]

# JavaScript's \s and String.prototype.trim() set (Python's differs slightly).
_JS_BLANK_CHARS = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    map(chr, range(0x2000, 0x200B)))
_JS_BLANKS = re.escape(_JS_BLANK_CHARS)  # the same, for use inside [...]
_URL_SAFE = re.compile(r"[A-Za-z0-9\-_.!~*'()]*")  # what encodeURIComponent leaves alone
_SCOPED = re.compile(r"(?:@([^/]+?)/)?([^/]+?)", re.DOTALL)
_IS_URL = re.compile(r"(?:git\+)?[a-z]+:", re.IGNORECASE)
_IS_SCP = re.compile(r"[^@]+@[^:.]+\.[^:]+:.+", re.IGNORECASE)
_TARBALL = re.compile(r"\.(?:tgz|tar\.gz|tar)\Z", re.IGNORECASE)
_LOCAL = re.compile(r"(?:\.|~/|/|[a-zA-Z]:)")
_GIT_SCHEMES = {"git", "git+http", "git+https", "git+rsync", "git+ftp", "git+file", "git+ssh"}
_GIT_SSH_SCP = re.compile(r"git\+ssh://([^:#]+:[^#]+(?:\.git)?)(?:#(.*))?", re.I | re.DOTALL)
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
_C0_AND_SPACE = "".join(map(chr, range(0x21)))  # what the WHATWG URL parser trims
_PATH = ("path", None, "a local file or directory; its name cannot be known before it is read")


def parse_arg(arg: str) -> Parsed:
    """Classify one `npm install` argument exactly as given."""
    if arg.startswith("-"):
        return ("option", None, "an npm config flag, not a package (it can change the registry, "
                                "the npmrc or lifecycle scripts)")
    if UNSAFE_CHARS.search(arg):
        return ("invalid", None, "contains a control character")
    kind, name, detail = npa(arg)
    if kind == "registry" and name is None:  # npm 11 would fetch the package called `undefined`
        return ("invalid", None, "a registry spec without a valid package name")
    return kind, name, detail


def valid_name(name: str) -> bool:
    """validate-npm-package-name's validForOldPackages (warnings such as capitals are fine)."""
    if not name or name[0] in "._-" or name.strip(_JS_BLANK_CHARS) != name:
        return False
    if name.lower() in ("node_modules", "favicon.ico"):
        return False
    if _URL_SAFE.fullmatch(name):
        return True
    scoped = _SCOPED.fullmatch(name)
    return bool(scoped and scoped.group(1) is not None and _URL_SAFE.fullmatch(scoped.group(1))
                and _URL_SAFE.fullmatch(scoped.group(2)) and not scoped.group(2).startswith("."))


def npa(arg: str) -> Parsed:
    """Split name from spec as npa() does, then classify (npm-package-arg `resolve`)."""
    name_ends = arg.find("@", 1)
    name_part = arg[:name_ends] if name_ends > 0 else arg
    name = None
    if _IS_URL.match(arg):
        spec = arg
    elif _IS_SCP.fullmatch(arg):
        spec = f"git+ssh://{arg}"
    elif not name_part.startswith("@") and ("/" in name_part or _TARBALL.search(name_part)):
        spec = arg
    elif name_ends > 0:
        name, spec = name_part, arg[name_ends + 1:] or "*"
    elif valid_name(arg):
        name, spec = arg, "*"
    else:
        spec = arg
    return _resolve(name, spec)


def _resolve(name: str | None, spec: str) -> Parsed:
    if name is not None and not valid_name(name):
        return ("invalid", None, f"{name!r} is not a valid npm package name")
    if spec.lower().startswith("file:") or _LOCAL.match(spec):
        return _PATH
    if spec.lower().startswith("npm:"):
        return _alias(spec[4:])
    hosted = _hosted(spec)
    if hosted is not None:
        return _git(hosted)
    if _IS_URL.match(spec):
        return _from_url(spec)
    if "/" in spec or _TARBALL.search(spec):
        return _PATH
    spec = spec.strip(_JS_BLANK_CHARS)
    if valid_range(spec) or _URL_SAFE.fullmatch(spec):
        return ("registry", name, None)
    return ("invalid", None, f"{spec!r} is neither a version range nor a valid dist-tag")


def _alias(target: str) -> Parsed:
    kind, name, detail = npa(target)
    if kind == "alias":
        return ("invalid", None, "nested aliases are not supported")
    if kind == "invalid":
        return ("invalid", None, f"bad alias target: {detail}")
    if kind != "registry":
        return ("invalid", None, "aliases only work for registry packages")
    if name is None:
        return ("invalid", None, "an alias target must have a name")
    return ("alias", name, f"an npm alias: installs the registry package '{name}'")


def _git(committish: str) -> Parsed:
    if not _git_attrs_ok(committish):
        return ("invalid", None, f"conflicting git #committish/semver/path parts: {committish!r}")
    return ("vcs", None, "a git repository; its name cannot be known before it is fetched")


def _git_attrs_ok(committish: str) -> bool:
    """npa `setGitAttrs`: at most one committish or semver range, at most one path."""
    seen: set[str] = set()
    for part in committish.split("::") if committish else ():
        key = part.split(":")[0] if ":" in part else "commit"
        key = "ref" if key in ("commit", "semver") else key
        if key in seen and key in ("ref", "path"):
            return False
        seen.add(key)
    return True


def _from_url(spec: str) -> Parsed:
    scheme = spec.split(":", 1)[0].lower()
    if scheme == "git+ssh":  # scp-style host:path after git+ssh:// is git unless it is a port
        scp = _GIT_SSH_SCP.fullmatch(spec)
        if scp and not re.search(r":[0-9]+(/|$)", scp.group(1)):
            return _git(scp.group(2) or "")
    parsed = _parse_url(spec)
    if parsed is None:
        return ("invalid", None, f"not a valid URL: {spec!r}")
    if scheme in _GIT_SCHEMES:
        return _git(parsed[3])
    if scheme in ("http", "https"):
        return ("url", None, "a tarball URL; its name cannot be known before it is downloaded")
    return ("invalid", None, f"unsupported URL type {scheme + ':'!r} (npm rejects it)")


def _parse_url(text: str) -> tuple[str, str, str, str] | None:
    """Just enough of WHATWG URL parsing: (scheme, host, path, fragment) or None if it throws."""
    match = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*):(//([^/?#]*))?([^?#]*)(?:\?[^#]*)?(?:#(.*))?",
                         text.strip(_C0_AND_SPACE), re.DOTALL)
    if match is None:
        return None
    scheme, authority, path, fragment = (match.group(1).lower(), match.group(3),
                                         match.group(4), match.group(5) or "")
    host = (authority or "").rpartition("@")[2]
    host, _, port = host.partition(":") if not host.startswith("[") else (host, "", "")
    if (port and not port.isdigit()) or re.search(r"[\s<>^|\\%]", host):
        return None
    if not host and scheme in ("http", "https", "ftp", "ws", "wss"):
        return None
    return scheme, host.lower(), path, fragment


def _hosted(spec: str) -> str | None:
    """hosted-git-info `fromUrl`: the committish when it recognises a hosted repo, else None."""
    url = _correct_protocol(f"github:{spec}" if _github_shorthand(spec) else spec)
    parsed = _parse_url(url) or _parse_url(_correct_url(url))
    if parsed is None or _bad_escape(parsed[2] + parsed[3]):
        return None
    scheme, host, path, fragment = parsed
    if scheme in _SHORTCUTS:
        return fragment
    site = _HOSTS.get(host.removeprefix("www."))
    if site is None or scheme not in site[1]:
        return None
    return _extract(site[0], path, fragment)


def _github_shorthand(arg: str) -> bool:
    """`owner/repo[#ref]`: one slash, nothing like a scheme, path, scope or blank before '#'."""
    head = arg.split("#", 1)[0]
    return (head.find("/") > 0 and head.count("/") == 1 and not head.endswith("/")
            and not head.startswith(".") and "@" not in head and ":" not in head
            and not re.search(r"[\s]", head))


def _correct_protocol(arg: str) -> str:
    colon = arg.find(":")
    if arg[:colon + 1].rstrip(":") in _PROTOCOLS or arg[colon:colon + 3] == "://":
        return arg
    at = arg.find("@")
    if at > -1:
        return f"git+ssh://{arg}" if at > colon else arg
    return f"{arg[:colon + 1]}//{arg[colon + 1:]}"


def _correct_url(url: str) -> str:
    """hosted-git-info `correctUrl`: scp-style `user@host:path` becomes `user@host/path`."""
    head = url.split("#", 1)[0]
    colon = head.rfind(":")
    if colon > head.rfind("@"):
        url = f"{url[:colon]}/{url[colon + 1:]}"
    if ":" not in url.split("#", 1)[0] and "//" not in url:
        url = f"git+ssh://{url}"
    return url


def _extract(host: str, path: str, fragment: str) -> str | None:
    """Each host's `extract`: user/project from the path; archive/raw links are tarballs."""
    parts = path.split("/")[1:]
    if host == "gitlab":
        if "/-/" in path[1:] or "/archive.tar.gz" in path[1:]:
            return None
        return fragment if "/".join(parts[:-1]) and parts[-1].removesuffix(".git") else None
    user, project, aux = (parts + ["", "", ""])[:3]
    if host == "github" and aux:  # only /tree/<ref> is a clone; /archive/... is a tarball
        fragment = (parts[3] if len(parts) > 3 else "undefined") if aux == "tree" else None
    if fragment is None or aux == _TARBALL_PAGES.get(host):
        return None
    if host == "gist":
        return fragment if user else None
    return fragment if user and project.removesuffix(".git") else None


def _bad_escape(text: str) -> bool:
    return bool(re.search(r"%(?![0-9A-Fa-f]{2})", text))


# node-semver (loose), with its "safe" repetition bounds.
_NUM = r"[0-9]{1,256}"
_PRE_ID = rf"(?:[0-9]{{0,256}}[a-zA-Z-][a-zA-Z0-9-]{{0,250}}|{_NUM})"
_PRE = rf"(?:-?{_PRE_ID}(?:\.{_PRE_ID})*)"
_STRICT_PRE_ID = r"(?:[0-9]{0,256}[a-zA-Z-][a-zA-Z0-9-]{0,250}|0|[1-9][0-9]{0,256})"
_BUILD = r"(?:\+[a-zA-Z0-9-]{1,250}(?:\.[a-zA-Z0-9-]{1,250})*)"
_WS = f"[{_JS_BLANKS}]"
_PREFIX = f"[v={_JS_BLANKS}]*"
_X = rf"({_NUM}|x|X|\*)"
_XRANGE_PLAIN = rf"{_PREFIX}{_X}(?:\.{_X}(?:\.{_X}(?:{_PRE})?{_BUILD}?)?)?"
_STRICT_X = r"(?:0|[1-9][0-9]{0,256}|x|X|\*)"
_STRICT_XRANGE = (rf"{_PREFIX}{_STRICT_X}(?:\.{_STRICT_X}(?:\.{_STRICT_X}"
                  rf"(?:-{_STRICT_PRE_ID}(?:\.{_STRICT_PRE_ID})*)?{_BUILD}?)?)?")
_LOOSE_PLAIN = rf"{_PREFIX}({_NUM})\.({_NUM})\.({_NUM}){_PRE}?{_BUILD}?"
_GTLT = r"((?:<|>)?=?)"
_CARET = re.compile(rf"\^{_XRANGE_PLAIN}")
_TILDE = re.compile(rf"~>?{_XRANGE_PLAIN}")
_XRANGE = re.compile(rf"{_GTLT}{_WS}?{_XRANGE_PLAIN}")
_COMPARATOR = re.compile(rf"{_GTLT}{_WS}?{_LOOSE_PLAIN}|")
_HYPHEN = re.compile(rf"{_WS}?{_XRANGE_PLAIN}{_WS}-{_WS}{_XRANGE_PLAIN}{_WS}?")
_TRIMS = ((re.compile(rf"({_WS}?){_GTLT}{_WS}?({_LOOSE_PLAIN}|{_STRICT_XRANGE})"), r"\1\2\3"),
          (re.compile(rf"({_WS}?)~>?{_WS}"), r"\1~"), (re.compile(rf"({_WS}?)\^{_WS}"), r"\1^"))
_STAR = re.compile(rf"(<|>)?=?{_WS}?\*")
_MAX_SAFE = 2 ** 53 - 1


def valid_range(text: str) -> bool:
    """semver.validRange(text, loose=True) is truthy: some `||` part keeps a comparator."""
    raw = re.sub(f"{_WS}+", " ", text.strip(_JS_BLANK_CHARS))
    try:
        return any(_comparators(part.strip(_JS_BLANK_CHARS)) for part in raw.split("||"))
    except OverflowError:  # a version number past MAX_SAFE_INTEGER throws in node-semver
        return False


def _comparators(part: str) -> list[str]:
    part = re.sub(_BUILD, "", part)
    if _HYPHEN.fullmatch(part):
        return [part]
    for pattern, replacement in _TRIMS:
        part = pattern.sub(replacement, part)
    return [token for token in part.split(" ") if _comparator_ok(token)]


def _comparator_ok(token: str) -> bool:
    """Loose mode drops what is not a caret, tilde, x-range, star or plain comparator."""
    for pattern in (_CARET, _TILDE, _XRANGE):
        match = pattern.fullmatch(token)
        # only an x-range keeps its text when out of order (`x.1`); ^ and ~ never do
        if match and (_in_order(match.groups()[-3:]) or pattern is not _XRANGE):
            return True
    match = _COMPARATOR.fullmatch(_STAR.sub("", token.strip(_JS_BLANK_CHARS), count=1))
    if match and any(g and g.isdigit() and int(g) > _MAX_SAFE for g in match.groups()):
        raise OverflowError(token)
    return match is not None


def _in_order(parts: tuple[str | None, ...]) -> bool:
    """An x-range may not be followed by a number (`x.1`, `1.x.2`); huge numbers throw."""
    if any(p and p.isdigit() and int(p) > _MAX_SAFE for p in parts):
        raise OverflowError(parts)
    major, minor, patch = (p in (None, "x", "X", "*") for p in parts)
    return not ((major and not minor) or (minor and parts[2] is not None and not patch))
