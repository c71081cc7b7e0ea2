"""The index reads an upstream page's links with its own fast paths (interface.index.url_parts):
each answer, refusals included, is the one `urllib.parse` gives."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from hypothesis import given
from hypothesis import strategies as st

from interface.index.url_parts import last_segment, origin, resolved


def urllib_origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)


def urllib_resolved(url: str, base: str) -> str | None:
    try:
        found = urljoin(base, url)
        urllib_origin(found)
    except ValueError:
        return None
    return found


def urllib_last_segment(url: str) -> str:
    return urlsplit(url).path.rsplit("/", 1)[-1]


def outcome(read, *args):
    try:
        return read(*args)
    except ValueError:
        return ValueError


BASES = [
    "https://pypi.org/simple/six/",
    "https://pypi.org/simple/six",
    "http://127.0.0.1:8080/simple/six/?x=1#y",
    "https://Mirror.Example:443/a/./b/../simple/six/",
    "https://h",
    "http://h:0/",
    "http://[::1/simple/",  # a bracket left open: urlsplit refuses the base
    "https://h:99999/simple/",  # a port out of range: only reading it refuses
    "mailto:someone",
    "simple/six/",
    "",
]
LINKS = [
    "../../packages/ab/cd/six-1.17.0-py2.py3-none-any.whl",
    "../../packages/six-1.17.0.tar.gz#sha256=" + "0" * 64,
    "six-1.17.0.tar.gz",
    "./six.whl",
    "a/./b/../six.whl",
    "../../../../../six.whl",
    "..",
    ".",
    "a/..",
    "a//b.whl",
    "/packages/six.whl",
    "//other.example/six.whl",
    "https://files.pythonhosted.org/packages/ab/cd/ef/six-1.17.0-py2.py3-none-any.whl",
    "https://files.pythonhosted.org/packages/six.whl#sha256=00",
    "HTTPS://Files.Example/six.whl",
    "https://Files.Example/six.whl",
    "http://files.example:8080/six.whl",
    "http://files.example:0/six.whl",
    "http://files.example:00080/six.whl",
    "http://files.example:65536/six.whl",
    "http://files.example:/six.whl",
    "http://files.example:8x/six.whl",
    "https://user@files.example/six.whl",
    "https://[::1]:8080/six.whl",
    "https://[::1/six.whl",
    "https://files.example/a;b/six.whl",
    "https://files.example/six.whl?x=1",
    "https://files.example",
    "https://files.example/",
    "https://files.example/-/pkg-1.0.0.tgz",
    "http://registry.example:4873/@scope/pkg/-/pkg-1.0.0.tgz",
    "https://",
    "https:six.whl",
    "file:///six.whl",
    "ftp://files.example/six.whl",
    " https://files.example/six.whl",
    "https://files.ex\tample/six.whl",
    "https://files.example/si\nx.whl",
    "six.whl:1",
    "a:b/six.whl",
    "%2e%2e/six.whl",
    "https://fïles.example/six.whl",
    "",
]


def test_every_link_resolves_against_every_base_as_urllib_resolves_it():
    differ = [(link, base) for base in BASES for link in LINKS if resolved(link, base) != urllib_resolved(link, base)]
    assert differ == []


def test_every_origin_and_last_segment_is_urllibs_including_its_refusals():
    differ = [url for url in LINKS + BASES if outcome(origin, url) != outcome(urllib_origin, url)]
    differ += [url for url in LINKS + BASES if outcome(last_segment, url) != outcome(urllib_last_segment, url)]
    assert differ == []


# Links built from the pieces that change how urllib reads them: schemes in either case, hosts
# with ports, userinfo and brackets, dot segments, empty segments, parameters, queries,
# fragments, percent signs, blanks and non-ASCII.
_PIECES = st.sampled_from(
    ["https://", "http://", "HTTP://", "ftp://", "//", "/", "./", "../", ".", "..", "a", "B", "0", ":", "@", "[",
     "]", ";", "?", "#", "%", "%2e", " ", "\t", "é", "host", "h.example", ":8080", ":0", ":70000", "-", "_", "~"]
)  # fmt: skip
_URLS = st.lists(_PIECES, max_size=12).map("".join)


@given(link=_URLS, base=st.sampled_from(BASES) | _URLS)
def test_any_link_resolves_as_urllib_resolves_it(link, base):
    assert resolved(link, base) == urllib_resolved(link, base)


@given(url=_URLS)
def test_any_origin_and_last_segment_is_urllibs(url):
    assert outcome(origin, url) == outcome(urllib_origin, url)
    assert outcome(last_segment, url) == outcome(urllib_last_segment, url)


FILENAMES = ["six-1.17.0-py2.py3-none-any.whl", "a b.tar.gz", "ü-1.0.whl", "x%2F.whl", "a/b.whl", "a?b#c.whl", "..",
             "~!$&'()*+,;=:@[].whl", "tab\there.whl", ""]  # fmt: skip


def test_a_pages_file_urls_are_the_ones_the_route_builds(tmp_path):
    from flask import url_for

    from application import Governance, store_env
    from interface import create_app
    from interface.index.pypi import file_urls

    governance = Governance(env=store_env(f"sqlite:///{tmp_path}/store.sqlite"))
    try:
        app = create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path)}, governance=governance)
        for base in ("http://127.0.0.1:8000/", "https://Index.Example:8443/under/a/prefix/"):
            with app.test_request_context("/pypi/acme/simple/six/", base_url=base):
                file_url = file_urls("acme", "six")
                built = {
                    n: url_for("pypi_index.file", ws="acme", project="six", filename=n, _external=True)
                    for n in FILENAMES
                }
                assert {n: file_url(n) for n in FILENAMES} == built
                assert built["a b.tar.gz"].endswith("/files/six/a%20b.tar.gz")  # the names were written in
    finally:
        governance.close()
