"""A page's api-version is raised to what its fields require, whatever the upstream declared."""

from interface.index.simple import api_version


def test_a_quarantined_page_declares_the_status_api_version():
    assert api_version({"meta": {"api-version": "1.0"}, "project-status": {}}) == "1.4"


def test_a_newer_declared_version_is_kept():
    assert api_version({"meta": {"api-version": "1.9"}}) == "1.9"


def test_an_upstream_version_with_a_superscript_digit_is_not_a_crash():
    # '²' is a digit to str.isdigit() and not a number to int(): the part is ignored, not a 500
    assert api_version({"meta": {"api-version": "1.²"}}) in {"1.²", "1.1"}
