"""Parent aggregation: counts kept as data, provenance of children, pruning, determinism."""

from hltm_resources.engines.base import Hints
from hltm_resources.engines.extractive.agents import ExtractiveAgents, merge_child_facets
from hltm_resources.models import Facet, Memory, NodeInfo, Summary


def leaf(i: int, location: str, skills: tuple[str, ...] = ()) -> tuple[NodeInfo, Memory]:
    nid = f"project:p{i}"
    facets = [Facet("location", location, 1, (f"d{i}",))]
    facets += [Facet("skill", s, 1, (f"d{i}",)) for s in skills]
    info = NodeInfo(nid, "project", f"p{i}", f"P{i}", "seat:s1", f"a/s1/p{i}")
    return info, Memory(nid, "project", tuple(facets), (), Summary("x", f"P{i}", ()), 1)


SEAT = NodeInfo("seat:s1", "seat", "s1", "Alice", "account:a", "a/s1")


def test_support_counts_and_child_provenance():
    children = [leaf(i, "Dublin, Ireland") for i in range(9)]
    children += [leaf(9, "Lisbon"), leaf(10, "Lisbon"), leaf(11, "Paris")]
    facets = merge_child_facets(children, 12, Hints())
    loc = {f.value: f for f in facets if f.key == "location"}
    assert loc["Dublin, Ireland"].support == 9
    assert loc["Dublin, Ireland"].source_ids == tuple(sorted(f"project:p{i}" for i in range(9)))
    assert loc["Lisbon"].support == 2
    # A value backed by a single project out of 12 is pruned as low-salience.
    assert "Paris" not in loc


def test_small_parents_keep_single_support_values():
    facets = merge_child_facets([leaf(1, "Dublin"), leaf(2, "Paris")], 2, Hints())
    assert {f.value for f in facets if f.key == "location"} == {"Dublin", "Paris"}


def test_equal_values_merge_across_spellings():
    children = [leaf(1, "Dublin, Ireland"), leaf(2, "dublin ireland"), leaf(3, "Dublin, Ireland")]
    facets = merge_child_facets(children, 3, Hints())
    loc = [f for f in facets if f.key == "location"]
    assert len(loc) == 1 and loc[0].support == 3 and loc[0].value == "Dublin, Ireland"


def test_parent_memory_has_all_views_and_renders_counts():
    children = [leaf(i, "Dublin, Ireland", ("Python",)) for i in range(5)] + [leaf(5, "Lisbon")]
    memory = ExtractiveAgents().aggregate(SEAT, children, Hints())
    assert memory.leaf_count == 6
    where = next(q for q in memory.qa if q.question.startswith("Where"))
    assert where.answer.startswith("Dublin, Ireland (5 of 6 projects)")
    assert memory.summary.concise and "Dublin, Ireland" in memory.summary.concise
    assert set(memory.summary.source_ids) == {c.node_id for c, _ in children}
    again = ExtractiveAgents().aggregate(SEAT, list(reversed(children)), Hints())
    assert again.content_hash() == memory.content_hash()


def test_empty_parent_still_has_every_view():
    memory = ExtractiveAgents().aggregate(SEAT, [], Hints())
    assert memory.facets and memory.qa and memory.summary.concise
    assert memory.leaf_count == 0


def test_intermediate_levels_keep_rare_values_so_counts_above_stay_exact():
    children = [leaf(i, "Dublin, Ireland") for i in range(9)] + [leaf(11, "Paris")]
    facets = merge_child_facets(children, 10, Hints(), top=False)
    assert {f.value: f.support for f in facets if f.key == "location"} == {
        "Dublin, Ireland": 9,
        "Paris": 1,
    }
