"""Rows bound into SQL text by application.store.literals are byte for byte what psycopg's
`ClientCursor.mogrify` makes of them, on a real PostgreSQL connection; whatever the fast path
does not render, psycopg renders (or refuses) itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.store.literals import binder
from tests.support.postgres_pool import split_schema

pytestmark = pytest.mark.postgres

TEMPLATE = "(%s, %s, %s)"
TRICKY_TEXT = ["", "plain", "it's", "back\\slash", "\\'", "''\\\\", "--", "$$", "é—😀", "line\nbreak", "tab\t"]
VALUES = st.one_of(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    st.sampled_from(TRICKY_TEXT),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.binary(max_size=64),
    st.uuids(),
    st.datetimes(timezones=st.just(UTC)),
    st.dates(),
)


@pytest.fixture
def cursor(primed_schema_url):
    url = split_schema(primed_schema_url)[0]
    with psycopg.connect(url, autocommit=True) as conn:
        yield psycopg.ClientCursor(conn)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=st.tuples(VALUES, VALUES, VALUES))
def test_a_row_of_the_store_s_types_is_bound_as_psycopg_binds_it(cursor, row):
    assert binder(cursor)(TEMPLATE, row) == cursor.mogrify(TEMPLATE, row)


def test_the_literals_read_back_as_the_values_they_bind(cursor):
    row = (*TRICKY_TEXT, -5, 2**64, True, None, b"\x00'\\", UUID(int=7), datetime(2026, 3, 3, tzinfo=UTC))
    template = "SELECT " + ", ".join(["%s"] * len(row))
    assert cursor.execute(binder(cursor)(template, row)).fetchone() == row


def test_a_minus_sign_before_a_negative_number_stays_an_operator(cursor):
    assert cursor.execute(binder(cursor)("SELECT 1 -%s", (-1,))).fetchone() == (2,)


@pytest.mark.parametrize(
    "other",
    [
        1.5,  # a float
        datetime(2026, 1, 2, 3, 4, 5),  # a naive datetime
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        type("Name", (str,), {})("a subclass of str"),
    ],
)
def test_a_value_of_another_type_is_left_to_psycopg(cursor, other):
    assert binder(cursor)(TEMPLATE, ("a", other, 1)) == cursor.mogrify(TEMPLATE, ("a", other, 1))


def test_an_instant_bound_before_in_utc_is_bound_in_its_own_zone_too(cursor):
    # UTC literals are remembered by instant; the same instant in another zone equals it as a key.
    utc = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for instant in (utc, utc.astimezone(timezone(timedelta(hours=5, minutes=30))), utc):
        assert binder(cursor)(TEMPLATE, ("a", instant, 1)) == cursor.mogrify(TEMPLATE, ("a", instant, 1))


def test_a_text_with_a_nul_is_refused_as_psycopg_refuses_it(cursor):
    with pytest.raises(psycopg.DataError, match="NUL"):
        binder(cursor)(TEMPLATE, ("a", "b\x00c", 1))


@pytest.mark.parametrize("template", ["(%s, '100%%', %s)", "(%(a)s, %s)", "(%s, %s)"])
def test_a_template_with_more_than_plain_placeholders_or_another_count_is_left_to_psycopg(cursor, template):
    row = ("x", 1) if template.count("%s") == 2 else ("x", 1, 2)
    try:
        expected = cursor.mogrify(template, row)
    except psycopg.ProgrammingError as refused:  # psycopg's own refusal, raised by the binder too
        with pytest.raises(type(refused)):
            binder(cursor)(template, row)
    else:
        assert binder(cursor)(template, row) == expected


def test_a_connection_in_another_encoding_is_bound_by_psycopg_alone(cursor):
    cursor.execute("SET client_encoding TO 'LATIN1'")
    assert binder(cursor) == cursor.mogrify
