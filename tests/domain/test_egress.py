"""Egress rules: the shared corpus, then the parser, addresses, allowlist and configuration."""

from __future__ import annotations

import json
import re
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

import pytest

from domain.egress import (
    REASONS,
    EgressVerdict,
    classify_address,
    evaluate_egress,
    normalize_allowlist,
    parse_deny_ranges,
)
from domain.egress.target import parse_ipv4
from domain.errors import EgressConfigError, FieldError
from tests.support.corpus import CORPUS_DIR

CORPUS = CORPUS_DIR / "egress.jsonl"


def _load_corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _case_id(case: dict) -> str:
    text = f"{case['target']!r} {case['note']}"
    return re.sub(r"\s+", " ", text)[:100]


CASES = _load_corpus()


def test_the_corpus_is_present_and_uses_only_known_reasons():
    assert CASES, f"no cases read from {CORPUS}"
    assert {case["reason"] for case in CASES} <= set(REASONS)
    assert all((case["expected"] == "allow") == (case["reason"] == "allowed") for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_every_corpus_case_gets_its_expected_verdict_and_reason(case):
    verdict = evaluate_egress(case["target"], case["resolved"], case["hostname_allowlist"])
    assert (verdict.allowed, verdict.reason) == (case["expected"] == "allow", case["reason"]), verdict


# --- WHATWG IPv4 parser ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("012.0.0.1", "10.0.0.1"),
        ("169.254.43518", "169.254.169.254"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("0XA9FEA9FE", "169.254.169.254"),
        ("127.0.0.1.", "127.0.0.1"),
        ("4294967295", "255.255.255.255"),
    ],
)
def test_the_whatwg_ipv4_parser_reads_inet_aton_forms(text, expected):
    assert parse_ipv4(text) == IPv4Address(expected)


@pytest.mark.parametrize(
    "text",
    [
        "256.0.0.1",
        "425.510.425.510",
        "7147006462",
        "4294967296",
        "0x41414141A9FEA9FE",
        "1.2.3.09",
        "1.2.3.4.5",
        "foo.0x7f",
        "1..2",
        "08",
        "1.2.3.256",
        "1.2.65536",
        "1.16777216",
    ],
)
def test_the_whatwg_ipv4_parser_refuses_overflow_and_bad_digits_without_wrapping(text):
    assert parse_ipv4(text) is None


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("2130706433", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("0177.0.0.1", "loopback"),
        ("127.1", "loopback"),
        ("012.0.0.1", "private-range"),
        ("169.254.43518", "cloud-metadata"),
        ("http://0/", "unspecified"),
    ],
)
def test_numeric_hosts_are_classified_as_the_address_they_reach(target, reason):
    assert evaluate_egress(target).reason == reason


@pytest.mark.parametrize("host", ["256.0.0.1", "7147006462", "1.2.3.09", "1.2.3.4.5", "foo.0x7f", "example.123"])
def test_a_host_ending_in_a_number_that_is_not_ipv4_is_an_invalid_target(host):
    verdict = evaluate_egress(f"http://{host}/")
    assert (verdict.allowed, verdict.reason, verdict.host) == (False, "invalid-target", None)


def test_an_ipv4_host_is_reported_in_canonical_dotted_form():
    verdict = evaluate_egress("http://0x08.0x08.2056:8080/")
    assert (verdict.allowed, verdict.host, verdict.port) == (True, "8.8.8.8", 8080)


# --- IPv6 literals, ports and refused syntax ------------------------------------------------


def test_bracketed_ipv6_with_a_port_is_parsed_and_canonicalised():
    verdict = evaluate_egress("https://[2606:4700:4700:0:0:0:0:1111]:8443/")
    assert verdict == EgressVerdict(True, "allowed", "2606:4700:4700::1111", 8443)


def test_unbracketed_ipv6_is_accepted_only_in_bare_host_form():
    assert evaluate_egress("2606:4700:4700::1111").allowed
    assert evaluate_egress("::1").reason == "loopback"
    assert evaluate_egress("http://2606:4700:4700::1111/").reason == "invalid-target"


@pytest.mark.parametrize(
    "target",
    [
        "http://[fe80::1%25eth0]/",
        "[fe80::1%eth0]",
        "http://[127.0.0.1]/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[]/",
        "http://[::1]:/",
        "http://[not-ipv6]/",
    ],
)
def test_zone_ids_ipv4_in_brackets_and_broken_brackets_are_invalid(target):
    assert evaluate_egress(target).reason == "invalid-target"


@pytest.mark.parametrize("port", ["0", "00000", "65536", "0065536", "99999", "", "-1", "+80", "8o", "٨٠"])
def test_ports_outside_1_to_65535_or_not_decimal_are_invalid(port):
    assert evaluate_egress(f"http://example.com:{port}/").reason == "invalid-target"
    assert evaluate_egress(f"example.com:{port}").reason == "invalid-target"


@pytest.mark.parametrize(
    ("target", "port"),
    [
        ("http://example.com/", 80),
        ("https://example.com/", 443),
        ("HTTPS://example.com:1/", 1),
        ("example.com", None),
        ("example.com:65535", 65535),
        # decimal, so leading zeros change nothing, however many
        ("http://example.com:021400/", 21400),
        ("example.com:000443", 443),
        ("example.com:" + "0" * 3000 + "8080", 8080),
    ],
)
def test_the_port_is_explicit_else_the_scheme_default_else_none(target, port):
    assert evaluate_egress(target).port == port


@pytest.mark.parametrize(
    "target",
    [
        "http://user@example.com/",
        "http://user:pw@example.com/",
        "user@example.com",
        "http://evil.com#@good.com/",
        "http://@example.com/",
    ],
)
def test_userinfo_is_refused_outright(target):
    verdict = evaluate_egress(target)
    if "#" in target:  # '#' ends the authority first, so the host is evil.com and it is judged
        assert verdict.host == "evil.com"
    else:
        assert verdict.reason == "invalid-target"


@pytest.mark.parametrize(
    "target",
    [
        "http://evil.com\\@good.com/",
        "http://example.com /",
        " example.com",
        "example.com\n",
        "http://exa\rmple.com/",
        "http://example.com\x7f/",
        "example.com\x00",
    ],
)
def test_backslash_whitespace_and_control_characters_are_refused(target):
    assert evaluate_egress(target).reason == "invalid-target"


@pytest.mark.parametrize("target", ["http://127%2e0%2e0%2e1/", "http://ex%61mple.com/", "%31.2.3.4"])
def test_percent_signs_in_the_host_are_refused_rather_than_decoded(target):
    assert evaluate_egress(target).reason == "invalid-target"


@pytest.mark.parametrize(
    "target", ["http:///example.com", "http://", "example.com/path", "example.com?q", "1http://x/"]
)
def test_empty_authorities_and_paths_without_a_scheme_are_invalid(target):
    assert evaluate_egress(target).reason == "invalid-target"


def test_schemes_are_checked_before_the_host_and_are_configurable():
    assert evaluate_egress("wss://127.0.0.1/").reason == "unsupported-scheme"
    assert evaluate_egress("wss://example.com/", schemes=("https", "wss")).port == 443
    assert evaluate_egress("HTTP://example.com/").allowed


# --- IDN --------------------------------------------------------------------------------------


def test_idn_hosts_use_non_transitional_uts46():
    assert evaluate_egress("https://faß.de/").host == "xn--fa-hia.de"
    assert evaluate_egress("münchen.de").host == "xn--mnchen-3ya.de"


def test_fullwidth_digits_and_ideographic_dots_are_mapped_before_the_ipv4_test():
    assert evaluate_egress("http://１２７。０。０。１/").reason == "loopback"


def test_underscores_are_allowed_in_names_as_in_smokescreen():
    assert evaluate_egress("https://_acme.Example.COM/").host == "_acme.example.com"


@pytest.mark.parametrize("host", ["xn--zz.example", "a" * 64 + ".com", ("a" * 60 + ".") * 5 + "com", "ex!ample.com"])
def test_broken_punycode_overlong_labels_and_names_are_invalid(host):
    assert evaluate_egress(host).reason == "invalid-target"


# --- name rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "metadata.google.internal",
        "metadata",
        "instance-data.ec2.internal",
        "metadata.packet.net",
        "kubernetes.default.svc.cluster.local",
        "Metadata.Tencentyun.COM.",
    ],
)
def test_metadata_names_are_blocked_with_no_resolved_addresses(host):
    assert evaluate_egress(f"http://{host}/").reason == "cloud-metadata"


def test_metadata_names_stay_blocked_when_allowlisted_or_resolving_publicly():
    verdict = evaluate_egress("metadata.packet.net", ["147.75.1.1"], ["metadata.packet.net", "*.packet.net"])
    assert (verdict.allowed, verdict.reason) == (False, "cloud-metadata")


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "app.localhost", "ip6-loopback", "localhost.localdomain"])
def test_localhost_names_are_loopback(host):
    assert evaluate_egress(host, [], ["*.localhost", "localhost"]).reason == "loopback"


# --- resolved answers -------------------------------------------------------------------------


def test_a_detail_names_the_refused_address_and_the_name_it_was_resolved_for():
    verdict = evaluate_egress("https://metadata.example/", ["93.184.215.14", "169.254.169.254"])
    assert verdict.detail == "169.254.169.254 (resolved for metadata.example) is a cloud metadata endpoint"


@pytest.mark.parametrize("answer", ["::ffff:10.0.0.1", "64:ff9b::10.0.0.1", "::FFFF:10.0.0.1", "::ffff:a00:1"])
def test_a_detail_names_a_resolved_address_as_resolved_as_the_record_keeps_it(answer):
    """`resolved` keeps `::ffff:10.0.0.1` as given, while the detail said `::ffff:a00:1`."""
    why = f"{answer} (resolved for x.example, embedding 10.0.0.1) is in a private range (10.0.0.0/8)"
    assert evaluate_egress("https://x.example/", ["93.184.215.14", answer]).detail == why
    mapped = answer.replace("10.0.0.1", "169.254.169.254").replace("a00:1", "a9fe:a9fe")
    metadata = f"{mapped} (resolved for x.example, embedding 169.254.169.254) is a cloud metadata endpoint"
    assert evaluate_egress("https://x.example/", [mapped]).detail == metadata
    public = answer.replace("10.0.0.1", "8.8.8.8").replace("a00:1", "808:808")
    ranges = [ip_network("8.8.8.0/24")]
    operator = evaluate_egress("https://x.example/", [public], deny_ranges=ranges)
    assert (
        operator.detail == f"{public} (resolved for x.example, embedding 8.8.8.8) is in operator deny range {ranges[0]}"
    )


@pytest.mark.parametrize("answer", ["not-an-ip", "2130706433", "", "[::1]", 2130706433, None])
def test_a_resolved_entry_that_is_not_an_ip_literal_fails_closed(answer):
    verdict = evaluate_egress("https://example.com/", ["93.184.215.14", answer])
    assert (verdict.allowed, verdict.reason, verdict.host) == (False, "invalid-target", "example.com")


def test_a_resolved_link_local_answer_with_a_zone_id_is_still_link_local():
    assert evaluate_egress("https://x.example/", ["fe80::1%eth0"]).reason == "link-local"


# --- addresses --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("169.254.169.254", "cloud-metadata"),
        ("::ffff:169.254.169.254", "cloud-metadata"),
        ("64:ff9b::a9fe:a9fe", "cloud-metadata"),
        ("fd00:ec2::254", "cloud-metadata"),
        ("192.0.0.192", "cloud-metadata"),
        ("127.255.0.1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("169.254.1.1", "link-local"),
        ("100.127.255.255", "private-range"),
        ("fd12::1", "private-range"),
        ("ff02::1", "multicast"),
        ("192.88.99.1", "reserved"),
        ("100::1", "reserved"),
        ("3fff::1", "reserved"),
        ("4000::1", "reserved"),
        ("100:0:0:1::1", "reserved"),
        ("2001:0:4136:e378::1", "ipv6-transition"),
        ("64:ff9b:1::a9fe:a9fe", "ipv6-transition"),
        ("::7f00:1", "ipv6-transition"),
        ("8.8.8.8", None),
        ("64:ff9b::808:808", None),
        ("2606:4700::1111", None),
        ("192.31.196.1", None),
        ("not an address", "invalid-target"),
    ],
)
def test_classify_address_follows_the_tables_after_unwrapping(address, reason):
    assert classify_address(address) == reason
    if reason not in (None, "invalid-target"):
        assert classify_address(ip_address(address)) == reason


# --- allowlist ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("a.example.com", True),
        ("a.b.example.com", True),
        ("example.com", False),
        ("evilexample.com", False),
        ("example.com.evil", False),
    ],
)
def test_a_wildcard_matches_any_depth_of_subdomain_but_not_the_apex(host, allowed):
    assert evaluate_egress(host, [], ["*.example.com"]).allowed is allowed


def test_entries_are_normalised_for_case_trailing_dot_and_unicode():
    assert normalize_allowlist(["Example.COM.", "münchen.de", "*.Ｅxample.org"]) == (
        "example.com",
        "xn--mnchen-3ya.de",
        "*.example.org",
    )
    assert evaluate_egress("https://xn--mnchen-3ya.de/", [], ["münchen.de"]).allowed


def test_none_is_open_and_an_empty_allowlist_denies_every_name():
    assert normalize_allowlist(None) is None
    assert evaluate_egress("example.com", [], None).allowed
    assert evaluate_egress("example.com", [], []).reason == "not-on-hostname-allowlist"


def test_an_ip_literal_never_matches_and_a_bad_entry_passed_directly_never_matches():
    assert evaluate_egress("8.8.8.8", [], ["8.8.8.8"]).reason == "not-on-hostname-allowlist"
    assert evaluate_egress("api.x.com", [], ["api.*.com", "*"]).reason == "not-on-hostname-allowlist"


def test_normalize_allowlist_names_every_bad_entry_with_its_rule():
    entries = ["ok.example", "*", "*.", "api.*.x", "*x.com", "x.*", "10.0.0.1", "[::1]", "::1", "*.*.x", "", 7]
    with pytest.raises(EgressConfigError) as raised:
        normalize_allowlist(entries, field="egress.hostname_allowlist")
    errors = raised.value.errors
    assert [error.field for error in errors] == [f"egress.hostname_allowlist[{i}]" for i in range(1, 12)]
    assert all(isinstance(error, FieldError) and error.message for error in errors)
    assert "IP literal" in errors[5].message and "IP literal" in errors[6].message
    assert "wildcard" in errors[2].message


def test_normalize_allowlist_refuses_a_single_string():
    with pytest.raises(EgressConfigError):
        normalize_allowlist("example.com")


# --- operator configuration ---------------------------------------------------------------------


def test_parse_deny_ranges_reads_cidrs_and_names_every_bad_one():
    assert parse_deny_ranges(["203.0.113.0/24", "2001:db8::/32"]) == (
        ip_network("203.0.113.0/24"),
        ip_network("2001:db8::/32"),
    )
    with pytest.raises(EgressConfigError) as raised:
        parse_deny_ranges(["8.8.8.0/24", "8.8.8.8/24", "nonsense", "1.2.3.4", "10.0.0.0/33"])
    assert [error.field for error in raised.value.errors] == [f"deny_ranges[{i}]" for i in range(1, 5)]


def test_deny_ranges_refuse_public_addresses_as_reserved_also_when_embedded_or_resolved():
    ranges = parse_deny_ranges(["8.8.8.0/24"])
    assert evaluate_egress("8.8.8.8", deny_ranges=ranges).reason == "reserved"
    assert evaluate_egress("[::ffff:8.8.8.8]", deny_ranges=ranges).reason == "reserved"
    assert evaluate_egress("dns.example", ["8.8.4.4", "8.8.8.8"], deny_ranges=ranges).reason == "reserved"
    assert evaluate_egress("8.8.4.4", deny_ranges=ranges).allowed


def test_the_allow_addresses_hatch_reaches_a_loopback_test_server_and_nothing_more():
    hatch = [IPv4Address("127.0.0.1")]
    assert evaluate_egress("http://127.0.0.1:8080/", allow_addresses=hatch).allowed
    assert evaluate_egress("http://127.0.0.2:8080/", allow_addresses=hatch).reason == "loopback"
    assert evaluate_egress("localhost", ["127.0.0.1"], allow_addresses=hatch).reason == "loopback"


def test_the_allow_addresses_hatch_does_not_unlock_metadata():
    hatch = [IPv4Address("169.254.169.254"), IPv6Address("::ffff:a9fe:a9fe"), IPv6Address("fd00:ec2::254")]
    for target in ("http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/", "http://[fd00:ec2::254]/"):
        assert evaluate_egress(target, allow_addresses=hatch).reason == "cloud-metadata"


# --- robustness --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: evaluate_egress(None),
        lambda: evaluate_egress(b"example.com"),
        lambda: evaluate_egress("example.com", None, None),
        lambda: evaluate_egress("example.com", [[]]),
        lambda: evaluate_egress("example.com", [], [None, 3, ["x"]]),
        lambda: evaluate_egress("example.com", deny_ranges=["nonsense"]),
    ],
)
def test_evaluate_egress_fails_closed_on_wrongly_typed_input_instead_of_raising(call):
    verdict = call()
    assert verdict.reason in REASONS
    assert verdict.allowed is (verdict.reason == "allowed")


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("github.com:443", "write the host name alone (github.com): an entry allows the host on any port"),
        ("https://github.com/", "write the host name alone (github.com), not a URL"),
        ("github.com/org", "write the host name alone (github.com), not a URL"),
        ("http://user@files.example:8080/x", "write the host name alone (files.example), not a URL"),
        ("host1:80", "write the host name alone (host1): an entry allows the host on any port"),
        ("1.2.3.4:80", "IP literals are not allowed"),
        ("[::1]:443", "IP literals are not allowed"),
    ],
)
def test_an_entry_with_a_port_or_a_scheme_is_told_to_name_the_host_alone(entry, said):
    with pytest.raises(EgressConfigError) as raised:
        normalize_allowlist([entry])
    assert said in raised.value.errors[0].message
