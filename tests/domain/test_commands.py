"""Install command lines: which programs are judged, and how their options are read."""

from __future__ import annotations

import pytest

from domain.errors import InvalidInputError
from domain.specs.commands import parse_command


def judged(argv):
    language, specs = parse_command(argv)
    return language, [(s.text, s.kind, s.name) for s in specs]


@pytest.mark.parametrize(
    "prefix",
    [
        ["pip", "install"],
        ["pip3", "install"],
        ["pip3.11", "install"],
        ["/usr/bin/pip", "install"],
        ["python", "-m", "pip", "install"],
        ["python3", "-m", "pip", "install"],
        ["python3.12", "-m", "pip", "install"],
        ["pip", "-q", "install"],
        ["uv", "pip", "install"],
    ],
)
def test_every_spelling_of_pip_install_is_judged_as_python(prefix):
    assert judged([*prefix, "Requests==2.31"]) == ("python", [("Requests==2.31", "registry", "requests")])


@pytest.mark.parametrize("verb", ["install", "i", "add", "in", "isntall"])
def test_npm_install_and_its_aliases_are_judged_as_node(verb):
    assert judged(["npm", verb, "lodash@^4"]) == ("node", [("lodash@^4", "registry", "lodash")])


def test_pnpm_add_is_judged_like_npm_install():
    assert judged(["pnpm", "add", "-D", "lodash@^4"]) == ("node", [("lodash@^4", "registry", "lodash")])
    assert judged(["pnpm", "add", "--registry", "http://evil/", "lodash"])[1][0][1] == "option"


def test_uv_pip_install_is_judged_like_pip_and_unknown_uv_flags_fail_closed():
    assert judged(["uv", "pip", "install", "-i", "http://evil/simple", "x"])[1][0][1] == "option"
    assert judged(["uv", "pip", "install", "--system", "x"])[1][0][1] == "option"


@pytest.mark.parametrize(
    "flags",
    [
        ["--overrides", "overrides.txt", "--index-strategy", "unsafe-best-match"],
        ["--torch-backend", "cpu", "-P", "numpy"],
        ["-p", "/usr/bin/python3", "--config-file", "/x/uv.toml"],
        ["--default-index", "https://evil.example/simple"],
    ],
)
def test_the_word_after_an_unknown_flag_is_refused_with_it_not_judged_as_a_package(flags):
    """uv's own flags take values pip's table does not know of: judged as packages, those values
    were recorded as allowed installs and came back as names to allow in synthesis."""
    _, specs = judged(["uv", "pip", "install", *flags, "requests"])
    assert [s for s in specs if s[1] != "option"] == [("requests", "registry", "requests")]
    assert all(value in " ".join(s[0] for s in specs) for value in flags)  # each named in a refusal


@pytest.mark.parametrize("argv", [["uv", "pip", "--offline", "install", "requests"], ["pip", "--foo", "install", "x"]])
def test_an_unknown_flag_before_the_command_does_not_take_the_command_with_it(argv):
    language, specs = judged(argv)  # judged (and refused for the flag), not "not an install command"
    flag = argv[argv.index("install") - 1]
    assert language == "python" and specs[0][1] == "option" and flag in specs[0][0]


@pytest.mark.parametrize(
    "argv",
    [
        ["pip", "uninstall", "requests"],
        ["pip", "download", "requests"],
        ["pnpm", "update", "lodash"],
        ["uv", "add", "lodash"],
        ["uv", "pip", "compile", "req.in"],
        ["yarn", "add", "lodash"],
        ["npm", "ci"],
        ["npm", "uninstall", "lodash"],
        ["npm"],
        ["pip"],
        ["python", "-c", "import os"],
        ["python", "-m", "venv", "x"],
        ["curl", "https://x"],
        [],
        ["pip", 3],
        "pip install requests",
        None,
    ],
)
def test_anything_but_an_install_command_is_refused_on_the_command_field(argv):
    with pytest.raises(InvalidInputError) as raised:
        parse_command(argv)
    assert [e.field for e in raised.value.errors] == ["command"]
    assert raised.value.errors[0].message


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--extra-index", "https://evil/simple"], "--extra-index https://evil/simple"),
        (["--extra-index-url=https://evil/simple"], "--extra-index-url=https://evil/simple"),
        (["-ihttps://evil/simple"], "-ihttps://evil/simple"),
        (["-qihttps://evil/simple"], "-qihttps://evil/simple"),
        (["--pypi-url", "https://evil/simple"], "--pypi-url https://evil/simple"),
        (["--index-url=https://evil/simple"], "--index-url=https://evil/simple"),
        (["--ind", "https://evil/simple"], "--ind https://evil/simple"),
        (["-r", "req.txt"], "-r req.txt"),
        (["-c", "constraints.txt"], "-c constraints.txt"),
        (["--target", "x"], "--target x"),
        (["-t/x"], "-t/x"),
        (["--prefix=/usr"], "--prefix=/usr"),
        (["--root", "/"], "--root /"),
        (["--user"], "--user"),
        (["--group", "dev"], "--group dev"),
        (["--trusted-host", "evil"], "--trusted-host evil"),
        (["-f", "./wheels"], "-f ./wheels"),
        (["--no-index"], "--no-index"),
        (["--src", "x"], "--src x"),
        (["--isolated"], "--isolated"),
        (["--requirements-from-script", "s.py"], "--requirements-from-script s.py"),
        (["-C", "k=v"], "-C k=v"),
        (["--no-build-isolation"], "--no-build-isolation"),
        (["--bogus"], "--bogus"),
        (["--no-b"], "--no-b"),
        (["-Z"], "-Z"),
        (["--target"], "--target"),
    ],
)
def test_options_that_change_what_or_where_are_judged_as_options(args, text):
    language, specs = judged(["pip", "install", "requests", *args])
    assert ("requests", "registry", "requests") in specs
    assert (text, "option", None) in specs


def test_an_option_spec_says_why_it_is_judged():
    _, specs = parse_command(["pip", "install", "--extra-index", "https://evil", "x"])
    assert "where packages come from" in specs[0].detail


@pytest.mark.parametrize(
    "flags",
    [
        ["-q"],
        ["--quiet"],
        ["-v"],
        ["-U"],
        ["--upgrade"],
        ["-qU"],
        ["--no-cache-dir"],
        ["--disable-pip-version-check"],
        ["--no-input"],
        ["--pre"],
        ["--no-deps"],
        ["--force-reinstall"],
        ["--no-color"],
        ["--progress-bar", "off"],
        ["--progress-bar=off"],
        ["--upgrade-strategy", "eager"],
        ["--require-hashes"],
        ["--only-binary", ":all:"],
        ["--prefer-binary"],
        ["--dry-run"],
        ["--root-user-action=ignore"],
    ],
)
def test_harmless_pip_flags_produce_no_spec(flags):
    assert judged(["pip", "install", *flags, "requests"]) == ("python", [("requests", "registry", "requests")])


def test_a_harmless_flag_does_not_swallow_the_package_after_it():
    assert judged(["pip", "install", "-U", "evil"])[1] == [("evil", "registry", "evil")]


def test_a_value_option_swallows_the_next_argument_even_if_it_looks_like_a_package():
    _, specs = judged(["pip", "install", "--progress-bar", "evil", "requests"])
    assert specs == [("requests", "registry", "requests")]


@pytest.mark.parametrize(
    ("args", "text", "kind", "name"),
    [
        (
            ["-e", "git+https://github.com/psf/requests.git#egg=requests"],
            "-e git+https://github.com/psf/requests.git#egg=requests",
            "vcs",
            "requests",
        ),
        (["--editable=git+https://x/r.git#egg=r"], "--editable=git+https://x/r.git#egg=r", "vcs", "r"),
        (
            ["-e", "requests @ git+https://github.com/psf/requests.git"],
            "-e requests @ git+https://github.com/psf/requests.git",
            "vcs",
            "requests",
        ),
        (["-e", "."], "-e .", "path", None),
        (["-e."], "-e.", "path", None),
        (["--editable", "requests"], "--editable requests", "invalid", None),
        (["-e", "https://x/y.tar.gz"], "-e https://x/y.tar.gz", "invalid", None),
    ],
)
def test_editables_are_judged_like_pip_reads_them_from_argv(args, text, kind, name):
    assert judged(["pip", "install", *args])[1] == [(text, kind, name)]


def test_options_after_a_double_dash_are_arguments():
    _, specs = judged(["pip", "install", "--", "-r"])
    assert specs == [("-r", "invalid", None)]  # pip reads it as a requirement, and fails


def test_a_pip_argument_is_not_split_like_a_requirements_file_line():
    _, specs = judged(["pip", "install", "requests --hash=sha256:00"])
    assert specs[0][1] == "invalid"


def test_pip_install_with_nothing_to_install_is_denied_shaped():
    for argv in (["pip", "install"], ["pip", "install", "-q"]):
        language, specs = parse_command(argv)
        assert [(s.kind, s.name, s.text) for s in specs] == [("option", None, " ".join(argv))]


def test_npm_install_without_packages_is_denied_shaped_because_it_installs_the_manifest():
    language, specs = parse_command(["npm", "install", "--save"])
    assert language == "node"
    assert [(s.text, s.kind) for s in specs] == [("npm install --save", "option")]
    assert "package.json" in specs[0].detail


@pytest.mark.parametrize(
    "flags",
    [
        ["--save"],
        ["-S"],
        ["--save-dev"],
        ["-D"],
        ["--save-optional"],
        ["-O"],
        ["--save-prod"],
        ["-P"],
        ["--save-exact"],
        ["-E"],
        ["--no-save"],
        ["--no-fund"],
        ["--no-audit"],
        ["--silent"],
        ["--loglevel=silent"],
        ["--loglevel", "warn"],
        ["--no-package-lock"],
        ["--save", "false"],
        ["--save=true"],
    ],
)
def test_harmless_npm_flags_produce_no_spec(flags):
    assert judged(["npm", "install", *flags, "lodash"]) == ("node", [("lodash", "registry", "lodash")])


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--registry", "https://evil"], "--registry https://evil"),
        (["--registry=https://evil"], "--registry=https://evil"),
        (["--@myco:registry=https://evil/"], "--@myco:registry=https://evil/"),
        (["--userconfig=./evil.npmrc"], "--userconfig=./evil.npmrc"),
        (["-g"], "-g"),
        (["--global"], "--global"),
        (["--prefix", "/usr"], "--prefix /usr"),
        (["--ignore-scripts=false"], "--ignore-scripts=false"),
        (["--foo"], "--foo"),
        (["--save=./x"], "--save=./x"),
        (["-SD"], "-SD"),
    ],
)
def test_other_npm_flags_are_judged_as_options_wherever_they_stand(args, text):
    for argv in (["npm", "install", "lodash", *args], ["npm", *args, "install", "lodash"]):
        _, specs = judged(argv)
        assert (text, "option", None) in specs and ("lodash", "registry", "lodash") in specs


def test_npm_packages_are_judged_exactly_as_given():
    _, specs = judged(["npm", "i", "lodash@npm:evil", " lodash", "u/r", "./x"])
    assert specs == [
        ("lodash@npm:evil", "alias", "evil"),
        (" lodash", "invalid", None),
        ("u/r", "vcs", None),
        ("./x", "path", None),
    ]


def test_npm_double_dash_makes_flags_package_arguments():
    _, specs = judged(["npm", "install", "--", "--registry"])
    assert specs == [("--registry", "option", None)]
