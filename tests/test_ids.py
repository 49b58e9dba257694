import pytest

from hltm_resources.ids import InvalidIdError, check_raw_id, parse_node_id
from hltm_resources.schema import DEFAULT_SCHEMA, TreeSchema
from hltm_resources.stores.vectors import subtree_filter


@pytest.mark.parametrize("value", ["seat:s1", "project:p-001", "account:acme.eu", "seat:a_b@c"])
def test_valid_node_ids_parse(value):
    node = parse_node_id(value)
    assert str(node) == value


@pytest.mark.parametrize(
    "value",
    [
        "seat",
        "team:s1",
        "seat:",
        "seat:s1' OR '1'='1",
        "seat:../etc",
        "seat:a/b",
        "seat:a b",
        "project:x;DROP TABLE mem_nodes",
        "seat:" + "x" * 200,
        "seat:a..b",
        "seat:%",
        None,
        42,
    ],
)
def test_unsafe_or_malformed_ids_are_rejected(value):
    with pytest.raises(InvalidIdError):
        parse_node_id(value, DEFAULT_SCHEMA)


def test_the_levels_of_a_node_id_come_from_the_tree_schema():
    four = TreeSchema.parse("org>team>seat>project")
    assert str(parse_node_id("team:s1", four)) == "team:s1"
    with pytest.raises(InvalidIdError, match="org, team, seat, project"):
        parse_node_id("account:a1", four)


def test_raw_id_error_names_the_field():
    with pytest.raises(InvalidIdError, match="seat_id"):
        check_raw_id("bad id", "seat_id")


def test_subtree_filter_does_not_use_like_wildcards():
    # '_' is a LIKE wildcard: a LIKE-based filter for a_1 would also match aX1.
    where = subtree_filter("a_1/s_1")
    assert "LIKE" not in where.upper()
    assert "starts_with(path, 'a_1/s_1/')" in where
