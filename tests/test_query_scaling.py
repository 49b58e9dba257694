"""What keeps a question fast in a huge scope gives the answers the plain loops give."""

from __future__ import annotations

from collections import defaultdict

import pytest

from hltm_resources.engines.base import ScopeVocabulary
from hltm_resources.engines.extractive import questions
from hltm_resources.engines.extractive.questions import _stated_values, _value_matches

VALUES = {
    "skill": ["C++", "C#", "C", "Go", "AWS", "A/B Testing", "Node.js", "Excel", "R"],
    "title": ["Data Engineer", "Senior Data Engineer", "Box", "Lead", "Registered Nurse"],
    "location": ["Lisbon, Portugal", "New York, New York", "São Paulo", "Austin"],
    "rejection_reason": ["salary expectations too high", "not willing to relocate"],
    "data_type": ["jobs"],
    "project_count": ["12"],
    "odd": ["++", "#", "", "!!"],
}


def brute_force(question: str, vocabulary: ScopeVocabulary) -> dict[str, list]:
    """Every value tried against the question, as parsing did before it had an index."""
    q_folded = questions.fold(question)
    matched: dict[str, list] = defaultdict(list)
    for key, values in vocabulary.values.items():
        if key in vocabulary.count_keys:
            continue
        for value in values:
            if questions._singular(questions.fold(value)) in questions._LEAF_NOUNS:
                continue
            score = _value_matches(value, q_folded.split(), q_folded)
            if score:
                matched[key].append((score, value))
    return matched


@pytest.mark.parametrize(
    "question",
    [
        "Which searches need C++ or C#?",
        "Which roles ask for Cs?",
        "Who hired Data Engineers in Lisbon?",
        "Senior data engineer boxes in Sao Paulo",
        "Which projects were rejected for salary expectations that were too high?",
        "Salary too high expectations, relocate?",
        "A/B testings and node.js in Austin",
        "Go goes gos AWSes",
        "++ and # and R",
        "Jobs in New York",
        "12 projects",
        "",
    ],
)
def test_the_value_lookup_finds_what_trying_every_value_finds(question):
    vocab = ScopeVocabulary(dict(VALUES), ("project_count",))
    expected = brute_force(question, vocab)
    got = _stated_values(question, vocab)
    expected.pop("workplace_type", None)
    got.pop("workplace_type", None)
    assert dict(got) == dict(expected)
    assert list(got) == list(expected)  # the same keys first: ties keep their order


# -- verification over an indexed scope ----------------------------------------------------

LOCATIONS = ["Lisbon, Portugal", "Berlin, Germany", "Berlin", "Toronto", "New York, New York"]
SKILLS = ["Terraform", "Go", "Python", "Kubernetes", "A/B Testing", "C++"]
REASONS = ["notice period too long", "failed the technical assessment"]
SENTENCES = [
    "The team sits in our {loc} office.",
    "Candidate is based in {loc}, happy to relocate.",
    "Must-have skills: {skill} and {skill2}.",
    "{skill} is not required for this one.",
    "Heads-up: the hiring manager now also wants {skill}.",
    "Candidate also knows {skill}, nice to see.",
    "Passed on Ana after the onsite - {reason}.",
    "We will not consider {loc}.",
]


def typo(word: str, rnd) -> str:
    if len(word) < 5 or rnd.random() < 0.7:
        return word
    i = rnd.randrange(len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]  # a swap: one edit


def random_leaves(seed: int):
    import random

    from query.verification import LeafFacts, Passage, tokenize

    rnd = random.Random(seed)
    leaves = {}
    for n in range(40):
        values = {}
        if rnd.random() < 0.5:
            values["location"] = rnd.sample(LOCATIONS, rnd.choice([1, 1, 2]))
        if rnd.random() < 0.5:
            values["skill"] = rnd.sample(SKILLS, rnd.randint(1, 3))
        if rnd.random() < 0.3:
            values["rejection_reason"] = [rnd.choice(REASONS)]
        passages = []
        for d in range(rnd.randint(0, 3)):
            text = " ".join(
                rnd.choice(SENTENCES).format(
                    loc=typo(rnd.choice(LOCATIONS).split(",")[0], rnd),
                    skill=typo(rnd.choice(SKILLS), rnd),
                    skill2=rnd.choice(SKILLS),
                    reason=rnd.choice(REASONS),
                )
                for _ in range(rnd.randint(1, 3))
            )
            kind = rnd.choice(["brief", "feedback"])
            passages.append(Passage(f"d{n}-{d}", kind, tuple(tokenize(text))))
        best = [rnd.choice([0.95, 0.9, 0.5]) for _ in range(3)] if rnd.random() < 0.8 else []
        level = "project" if rnd.random() < 0.9 else "seat"
        leaves[f"{level}:n{n:02d}"] = LeafFacts(best, values, passages)
    return leaves


def reference_verify(parsed, schema, leaves, vocabulary):
    """The plain loop over every leaf that :func:`verify` is."""
    from hltm_resources.engines.base import LeafMatch
    from hltm_resources.engines.vocabulary import same_value_key
    from query.verification import (
        constraints,
        evidence_source,
        facet_states,
        fold,
        one_valued,
    )

    wanted = constraints(parsed)
    out = []
    for leaf in sorted(leaves):
        if not wanted or not schema.is_leaf(leaf.split(":", 1)[0]):
            continue
        facts = leaves[leaf]
        how = []
        for _, m in wanted:
            have = facts.values.get(m.key, [])
            if any(same_value_key(m.key, v) == same_value_key(m.key, m.value) for v in have):
                how.append("facet")
                continue
            if have and one_valued(m.key):
                break
            other = {"skill": "preferred_skill", "preferred_skill": "skill"}.get(m.key)
            if other and any(
                same_value_key(other, v) == same_value_key(m.key, m.value)
                for v in facts.values.get(other, [])
            ):
                break
            rivals = [v for v in vocabulary.get(m.key, []) if fold(v) != fold(m.value)]
            rivals = [r for r in rivals if not facet_states(r, m.value)]
            source = evidence_source(facts.passages, m.key, m.value, rivals)
            if source is None:
                break
            how.append(source)
        else:
            out.append(LeafMatch(leaf, tuple(how), leaf))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_verification_over_an_indexed_scope_is_the_plain_loop(seed):
    from hltm_resources.engines.base import MicroQuery, ParsedQuery
    from hltm_resources.schema import DEFAULT_SCHEMA
    from query.verification import ScopeLeaves, leaf_values

    leaves = random_leaves(seed)
    vocabulary = {"location": LOCATIONS, "skill": SKILLS, "rejection_reason": REASONS}
    index = ScopeLeaves(leaves)
    queries = [
        (MicroQuery("location", "Lisbon, Portugal"),),
        (MicroQuery("skill", "Terraform"), MicroQuery("location", "Berlin")),
        (MicroQuery("skill", "Kubernetes"), MicroQuery("skill", "Python")),
        (MicroQuery("rejection_reason", "notice period too long"),),
        (MicroQuery("mention", "Toronto"), MicroQuery("skill", "C++")),
    ]
    for micro in queries:
        parsed = ParsedQuery("retrieval", micro)
        expected = reference_verify(parsed, DEFAULT_SCHEMA, leaves, vocabulary)
        assert index.verify(parsed, DEFAULT_SCHEMA, vocabulary) == expected
    for key, known in vocabulary.items():
        pool = sorted(leaves)
        counts: dict[str, int] = defaultdict(int)
        for leaf in pool:
            for value in leaf_values(leaves[leaf], key, known):
                counts[value] += 1
        expected = sorted(counts.items(), key=lambda kv: (-kv[1], questions.fold(kv[0])))
        assert index.distribution(pool, key, known) == expected
        assert index.distribution(pool[::2], key, known) == index.distribution(
            pool[::2],
            key,
            list(known),  # another list of the same values: counted afresh
        )


# -- the known values a facet value can state, by their words ---------------------------------


def edits(word: str, rnd) -> str:
    """``word`` with one random edit of the kinds a typo makes (or none)."""
    if not word or rnd.random() < 0.4:
        return word
    i = rnd.randrange(len(word))
    kind = rnd.choice("insert delete substitute swap".split())
    letter = rnd.choice("aeiourstx")
    if kind == "insert":
        return word[:i] + letter + word[i:]
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "substitute":
        return word[:i] + letter + word[i + 1 :]
    return word[:i] + word[i + 1 : i + 2] + word[i : i + 1] + word[i + 2 :]


def random_values(rnd, n: int) -> list[str]:
    words = [w for v in (*LOCATIONS, *SKILLS, *REASONS, *VALUES["title"]) for w in v.split()]
    words += ["Lisboa", "Berln", "Kubernets", "", "C", "++", "Data,", "Engineer,"]
    out = []
    for _ in range(n):
        picked = [edits(rnd.choice(words), rnd) for _ in range(rnd.choice([1, 1, 2, 3]))]
        out.append(rnd.choice([" ", ", ", " and "]).join(picked))
    return out + out[: n // 10]  # some listed twice


@pytest.mark.parametrize("seed", range(8))
def test_naming_a_value_by_the_word_index_is_the_plain_loop(seed):
    import random

    from query.verification import KnownValues, _named_all, _one_value, facet_states

    rnd = random.Random(seed)
    known = random_values(rnd, 120)
    index = KnownValues(known)
    for text in random_values(rnd, 60):
        close = set(index.near(text))
        assert {w for w in known if facet_states(text, w) or facet_states(w, text)} <= close
        # The plain loops the indexed helpers replace:
        exact = [w for w in known if questions.fold(w) == questions.fold(text)]
        stated = [w for w in known if facet_states(text, w)]
        named = exact[:1] or [
            w for w in stated if not any(o != w and facet_states(o, w) for o in stated)
        ]
        assert _named_all(text, known, index) == named
        rivals = [
            r
            for r in known
            if r != text and not facet_states(r, text) and not facet_states(text, r)
        ]
        assert index.rivals(text) == rivals
        others = [v for v in known if questions.fold(v) != questions.fold(text)]
        assert index.not_stating(text) == [r for r in others if not facet_states(r, text)]
    for _ in range(40):
        values = rnd.sample(known, rnd.choice([1, 2, 3]))
        assert _one_value(values, known, index) == reference_one_value(values, known)


def reference_one_value(values, known):
    """:func:`_one_value` as the loop over every known value it was."""
    from query.verification import facet_states

    support, wider = defaultdict(int), set()
    for w in known:
        for v in values:
            if facet_states(v, w):
                support[w] += 1
            elif facet_states(w, v):
                support[w] += 1
                if questions.fold(w.split(",")[0]) != questions.fold(v):
                    wider.add(w)
    support = {w: n for w, n in support.items() if n > 1 or w not in wider}
    if not support:
        return None
    rank = {w: i for i, w in enumerate(known)}
    return max(
        support, key=lambda w: (support[w], len(questions.fold(w).split()), len(w), -rank[w])
    )


# -- a scope's vocabulary from cached sets of values ------------------------------------------


def reference_one_spelling(values):
    """The loop :func:`one_spelling` is: later misspellings of kept values are dropped."""
    from query.verification import facet_states

    kept, blocks = [], defaultdict(list)
    for v in values:
        folded = questions.fold(v)
        n = len(folded.split())
        mine = [(n, "<", folded[:3]), (n, ">", folded[-3:])]
        alike = [w for b in mine for w in blocks[b]]
        if any(abs(size - len(folded)) <= 1 and facet_states(v, w) for size, w in alike):
            continue
        for b in mine:
            blocks[b].append((len(folded), v))
        kept.append(v)
    return kept


SPELLINGS = [
    "Google Analytics",
    "Google Analtics",
    "Google Anaytics",
    "Data Engineer",
    "Data Enginer",
    "Senior Data Engineer",
    "Berlin",
    "Berlin, Germany",
    "Berlni",
    "Go",
    "Go",
    "",
    "!!",
]


@pytest.mark.parametrize("seed", range(20))
def test_one_spelling_from_a_cached_set_is_the_plain_loop_in_any_order(seed):
    import random

    from query.verification import ValueSetCache

    cache = ValueSetCache(size=2)
    rnd = random.Random(seed)
    for _ in range(5):  # the same set in other orders, and other sets, through one cache
        values = rnd.sample(SPELLINGS, rnd.randint(1, len(SPELLINGS)))
        assert cache.one_spelling(values) == reference_one_spelling(values)


def test_values_an_alias_adds_are_the_same_from_a_cached_set():
    from query.verification import ValueIndex, ValueSetCache, is_new_value

    cache = ValueSetCache()
    have = ["Data Engineer", "Biostatistician", "Toronto", "Canada"]
    offered = ["Senior Data Engineer", "Lead Biostatistician", "Toronto, Canada", "Nurse"]
    known = ValueIndex(have + offered)
    for key in ("title", "location", "learned_key"):
        expected = [v for v in offered if is_new_value(v, known, key)]
        assert cache.new_values(key, have, offered) == expected
        assert cache.new_values(key, have[::-1], offered) == expected  # cached: same answer


@pytest.mark.parametrize("seed", range(8))
def test_a_passage_whose_words_cannot_mention_a_value_does_not(seed):
    import random

    from query.verification import may_mention, mentions, tokenize

    rnd = random.Random(seed)
    words = ["terraform", "kubernetes", "lisbon", "go", "data", "engineer", "berlin", "c"]
    for _ in range(300):
        text = " ".join(typo(rnd.choice(words), rnd) for _ in range(rnd.randint(0, 8)))
        tokens = tokenize(text)
        value = rnd.choice(["Terraform", "Data Engineer", "Lisbon, Portugal", "Go", "C++", "B"])
        if mentions(tokens, value):
            assert may_mention(frozenset(tokens), value)


# -- the store ---------------------------------------------------------------------------------


def facet_store(path, dim=8, seed=0):
    """A facets table of several fragments, half its rows tied on one vector, a node's rows
    spread over fragments, some rows deleted."""
    import numpy as np
    import pyarrow as pa

    from hltm_resources.stores.vectors import VectorStore, table_schema

    rng = np.random.default_rng(seed)
    store = VectorStore(path, "test-model", dim)
    table = store.table("facets", create=True)
    shared = rng.standard_normal(dim).astype(np.float32)
    for batch in range(3):
        vectors = rng.standard_normal((40, dim)).astype(np.float32)
        vectors[::2] = shared
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        n = len(vectors)
        rows = {
            "node_id": [f"project:p{i % 17:03d}" for i in range(n)],
            "level": ["project"] * n,
            "path": [f"{'a' if i % 17 % 3 else 'b'}/s/p{i % 17:03d}" for i in range(n)],
            "scopes": [
                [f"account:{'a' if i % 17 % 3 else 'b'}", "seat:s", f"project:p{i % 17:03d}"]
                for i in range(n)
            ],
            "text": [f"skill: Go {batch} {i}" for i in range(n)],
            "key": ["skill"] * n,
            "value": [f"Go {batch} {i}" for i in range(n)],
            "support": [1] * n,
            "source_ids": [["d1"]] * n,
            "valid_from": [""] * n,
            "vector": list(vectors),
        }
        table.add(pa.table(rows).cast(table_schema("facets", "test-model", dim)))
    table.delete("value IN ('Go 0 3', 'Go 1 4', 'Go 2 5')")
    return store, shared, rng


def test_one_search_for_several_vectors_returns_what_each_search_returns(tmp_path):
    import numpy as np

    from hltm_resources.stores.vectors import subtree_filter

    store, shared, rng = facet_store(tmp_path / "lancedb")
    dim = len(shared)
    queries = np.vstack([shared, rng.standard_normal((3, dim)).astype(np.float32)])
    for where in (subtree_filter("a"), subtree_filter("b")):
        many = store.search_many("facets", queries, where, 25, ["node_id", "path"])
        assert len(many) == len(queries)
        for query, hits in zip(queries, many, strict=True):
            assert hits.equals(store.search("facets", query, where, 25, ["node_id", "path"]))
            assert all(p.startswith(where.split("'")[1]) for p in hits.column("path").to_pylist())


# -- caches follow the tables ------------------------------------------------------------------


def test_a_question_after_a_rebuild_reads_the_new_rows_not_cached_ones(fresh_home, monkeypatch):
    from datetime import timedelta

    import duckdb

    import query.memory
    from hltm_resources.stores import vectors
    from hltm_resources.stores.vectors import VectorStore
    from query import Memory

    monkeypatch.setattr(query.memory, "READ_CONSISTENCY", timedelta(0))
    monkeypatch.setattr(vectors, "VERSION_TTL_S", 0.0)
    with duckdb.connect(str(fresh_home.duckdb_path), read_only=True) as con:
        seat, project, location = con.execute(
            "SELECT s.node_id, p.node_id, f.value FROM mem_nodes p JOIN mem_nodes s"
            " ON starts_with(p.path, s.path || '/') JOIN mem_facets f ON f.node_id = p.node_id"
            " WHERE p.level = 'project' AND s.level = 'seat' AND f.key = 'location'"
            " ORDER BY p.node_id LIMIT 1"
        ).fetchone()
    question = f"Which projects are in {location}?"
    mem = Memory(fresh_home, log_queries=False)
    before = mem.retrieve(question, scope=seat).context
    summary = mem.retrieve("Where are the jobs usually located?", scope=seat).context
    assert project in {m.node_id for m in before.matches}
    assert summary.leaves_counted >= 1

    # A rebuild drops the project from every table (a new version of each).
    VectorStore(fresh_home.lancedb_path, None, None).delete_nodes([project])

    after = mem.retrieve(question, scope=seat).context
    assert project not in after.node_ids()
    assert project not in {m.node_id for m in after.matches}
    again = mem.retrieve("Where are the jobs usually located?", scope=seat).context
    assert again.leaves_counted == summary.leaves_counted - 1
    assert project not in mem.catalog()


def test_a_bounded_row_cache_answers_as_an_unbounded_one(built_home, monkeypatch):
    import duckdb

    import query.retrieval
    from query import Memory

    with duckdb.connect(str(built_home.duckdb_path), read_only=True) as con:
        scopes = [r[0] for r in con.execute("SELECT node_id FROM mem_nodes ORDER BY 1").fetchall()]
    questions = ["Where are the jobs usually located?", "Which projects require Python?"]

    def answers():
        mem = Memory(built_home, log_queries=False)
        out = [mem.ask(q, scope=s).as_dict() for s in scopes for q in questions]
        return mem, [{k: v for k, v in a.items() if k != "timings"} for a in out]

    _, unbounded = answers()
    monkeypatch.setattr(query.retrieval, "MAX_HELD_ROWS", 60)
    mem, bounded = answers()
    assert bounded == unbounded
    assert len(mem.retriever._cache) < 4 * len(scopes)  # scopes were forgotten
    assert mem.retriever._held <= max(60, max(len(r or ()) for r in mem.retriever._cache.values()))


@pytest.mark.parametrize("seed", range(4))
def test_stated_is_the_word_pattern_it_replaced(seed):
    import random
    import re

    rnd = random.Random(seed)
    alphabet = "aes s+#1"
    for _ in range(3000):
        folded = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 4)))
        question = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12)))
        pattern = rf"(?<![a-z0-9]){re.escape(folded)}(?:e?s)?(?![a-z0-9])"
        assert questions._stated(folded, question) == bool(re.search(pattern, question))


def test_near_words_are_the_words_near_holds_near():
    import itertools

    from query.verification import _near, _near_words

    letters = "abe1"
    for word in ["abeab", "aabbe", "abe", "ab+ee", "eeeeee"]:
        near = _near_words(word)
        for n in range(len(word) - 1, len(word) + 2):
            for chars in itertools.product(letters + "+", repeat=n):
                other = "".join(chars)
                if set(other) <= set(letters):  # what tokenize makes
                    assert (other in near) == (other == word or _near(word, other)), other


def test_the_rows_of_picked_nodes_read_from_a_kept_scope_are_the_rows_a_scan_returns(
    tmp_path, monkeypatch
):
    import random

    import numpy as np

    import query.retrieval
    from hltm_resources.schema import DEFAULT_SCHEMA
    from hltm_resources.stores.vectors import node_filter, subtree_filter
    from query.retrieval import COLUMNS, Retriever, ViewRows

    store, _, _ = facet_store(tmp_path / "lancedb")
    retriever = Retriever(store, DEFAULT_SCHEMA)
    where = subtree_filter("a")
    nodes = sorted(set(store.scan("facets", ["node_id"], where).column("node_id").to_pylist()))
    rnd = random.Random(0)
    for _ in range(10):
        picked = rnd.sample(nodes, rnd.randint(1, len(nodes)))
        scanned = ViewRows.from_arrow(
            store.scan("facets", COLUMNS["facets"], f"{where} AND {node_filter(picked)}")
        )
        for held in (100_000, 0):  # kept, and too large to keep
            monkeypatch.setattr(query.retrieval, "MAX_HELD_SCOPE_ROWS", held)
            got = retriever._rows_of_nodes("facets", where, f"a{held}", picked)
            assert got.cols == scanned.cols
            assert np.array_equal(got.vectors, scanned.vectors)


@pytest.mark.parametrize("seed", range(4))
def test_tokenize_reads_what_folding_each_clause_makes(seed):
    import random

    from query.verification import _TOKEN, fold_keep_breaks, tokenize

    rnd = random.Random(seed)
    alphabet = "aZ9 .;:!?+#-,\n\téÉçß\u0301\u212a"
    for _ in range(5000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 20)))
        assert tokenize(text) == _TOKEN.findall(fold_keep_breaks(text)), repr(text)


def test_a_large_table_gets_a_vector_index_and_searches_through_it_stay_in_scope(
    fresh_home, monkeypatch
):
    import duckdb

    import query.retrieval
    from hltm_resources.stores.vectors import TABLES, VectorStore
    from query import Memory

    store = VectorStore(fresh_home.lancedb_path, None, None)
    assert not any(store.vector_indexed(name) for name in TABLES)  # below the default size
    # What `hltm index` does for tables this large, and for a facets table with a scope
    # too large for the exact search over its texts.
    store.tidy(index_from=256, keys_from=256, exact_facets=(0, 0))
    indexed = [name for name in TABLES if store.vector_indexed(name)]
    assert "facets" in indexed
    keys = {tuple(i.columns) for i in store.table("facets").list_indices()}
    assert {("path",), ("node_id",)} <= keys

    with duckdb.connect(str(fresh_home.duckdb_path), read_only=True) as con:
        seats = con.execute(
            "SELECT node_id, path FROM mem_nodes WHERE level = 'seat' ORDER BY 1"
        ).fetchall()
    questions = ["Which projects require Python?", "Where are the jobs usually located?"]
    monkeypatch.setattr(query.retrieval, "MAX_CACHED_ROWS", 0)  # every scope goes to LanceDB
    mem = Memory(fresh_home, log_queries=False)
    for seat, path in seats:
        for question in questions:
            context = mem.retrieve(question, scope=seat).context
            found = context.node_ids() - {seat}
            assert found, (seat, question)
            catalog = mem.catalog()
            assert all(catalog[n][1].startswith(path + "/") for n in found), (seat, question)


def test_a_facets_table_gets_a_vector_index_only_once_a_scope_can_be_past_the_exact_search(
    fresh_home,
):
    """Every scope of up to ``EXACT_FACET_ROWS`` facet rows and ``EXACT_FACET_TEXTS``
    distinct texts is searched exactly over its texts, never through the index: a facets
    table gets it only past either (its key indexes as before)."""
    from hltm_resources.stores.vectors import VectorStore

    store = VectorStore(fresh_home.lancedb_path, None, None)
    facets = store.table("facets")
    rows = facets.count_rows()
    texts = len(set(facets.search().select(["text"]).limit(None).to_arrow()["text"].to_pylist()))
    assert rows >= 256 and texts < rows  # facet texts repeat

    store.tidy(index_from=256, keys_from=256, exact_facets=(rows, texts))
    assert not store.vector_indexed("facets")
    assert {("path",), ("node_id",)} <= {tuple(i.columns) for i in facets.list_indices()}

    store.tidy(index_from=256, keys_from=256, exact_facets=(rows, texts - 1))  # one text more
    assert store.vector_indexed("facets")


def test_a_facets_table_past_the_exact_search_by_its_rows_gets_a_vector_index(fresh_home):
    from hltm_resources.stores.vectors import VectorStore

    store = VectorStore(fresh_home.lancedb_path, None, None)
    rows = store.table("facets").count_rows()
    store.tidy(index_from=256, keys_from=256, exact_facets=(rows - 1, 10**9))
    assert store.vector_indexed("facets")


def test_an_incremental_index_leaves_few_new_rows_outside_the_indexes_and_searches_find_them(
    fresh_home,
):
    """``tidy(when_needed=True)`` (what an incremental ``hltm index`` ends with) compacts a
    table only once many of its rows are outside its indexes; until then the vector and the
    full-text search read those rows flat, so they are found all the same."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from hltm_resources.stores import vectors as store_module
    from hltm_resources.stores.vectors import VectorStore

    store = VectorStore(fresh_home.lancedb_path, None, None)
    store.tidy(index_from=256, keys_from=256, exact_facets=(0, 0))  # every table indexed
    evidence = store.table("evidence")
    total = evidence.count_rows()
    some = evidence.search().limit(3).to_arrow()
    new_ids = [f"{p}-new" for p in some.column("passage_id").to_pylist()]
    new = some.set_column(
        some.schema.get_field_index("passage_id"), "passage_id", pa.array(new_ids)
    ).set_column(
        some.schema.get_field_index("text"),
        "text",
        pc.binary_join_element_wise(some.column("text"), " zebracorn", ""),
    )
    evidence.add(new)
    version = store.version("evidence")
    (text_index,) = [i.name for i in evidence.list_indices() if i.columns == ["text"]]

    assert store.tidy(index_from=256, keys_from=256, when_needed=True) == []  # 3 rows: left
    assert store.version("evidence") == version
    assert evidence.index_stats(text_index).num_unindexed_rows == 3
    where = "path != ''"
    found = store.text_search("evidence", "zebracorn", where, 10, ["passage_id"])
    assert sorted(found.column("passage_id").to_pylist()) == sorted(new_ids)
    vector = np.asarray(new.column("vector")[0].as_py(), dtype=np.float32)
    near = store.search("evidence", vector, where, 5, ["passage_id"])
    assert {new_ids[0], some.column("passage_id")[0].as_py()} <= set(
        near.column("passage_id").to_pylist()
    )

    many = int(store_module.TIDY_UNINDEXED_SHARE * total) + 1 - 3  # past the share: tidied
    rows = evidence.search().limit(many).to_arrow()
    rows = rows.set_column(
        rows.schema.get_field_index("passage_id"),
        "passage_id",
        pc.binary_join_element_wise(rows.column("passage_id"), "-more", ""),
    )
    evidence.add(rows)
    assert "evidence" in store.tidy(index_from=256, keys_from=256, when_needed=True)
    assert evidence.index_stats(text_index).num_unindexed_rows == 0


def test_a_scope_label_filter_keeps_exactly_the_rows_of_the_subtree(fresh_home):
    """Every node as a scope: its label filter (one label-index lookup) keeps the same rows
    of every table as the path filter, indexed or not."""
    from hltm_resources.stores.vectors import TABLES, VectorStore, scope_filter, subtree_filter

    store = VectorStore(fresh_home.lancedb_path, None, None)
    assert store.has_scope_labels()
    catalog = store.scan("summaries", ["node_id", "path"]).to_pylist()
    for indexed in (False, True):
        if indexed:
            store.tidy(index_from=10**9, keys_from=1)  # the label index (and the B-trees)
            assert ("scopes",) in {tuple(i.columns) for i in store.table("facets").list_indices()}
        for node in catalog:
            for name in TABLES:
                by_label = store.scan(name, ["node_id", "text"], scope_filter(node["node_id"]))
                by_path = store.scan(name, ["node_id", "text"], subtree_filter(node["path"]))
                assert sorted(by_label.to_pylist(), key=str) == sorted(by_path.to_pylist(), key=str)


def test_tables_written_before_scope_labels_are_filtered_by_path_and_still_written(
    fresh_home, world
):
    from hltm_resources.indexing.indexer import Indexer
    from hltm_resources.stores.vectors import TABLES, VectorStore
    from query import Memory

    store = VectorStore(fresh_home.lancedb_path, None, None)
    for name in TABLES:
        store.table(name).drop_columns(["scopes"])  # as an older version wrote them
    store = VectorStore(fresh_home.lancedb_path, None, None)
    assert not store.has_scope_labels()
    seat = f"seat:{world.seats[0]['seat_id']}"
    mem = Memory(fresh_home, log_queries=False)
    scope = mem.resolve(seat)
    assert not scope.labeled and "starts_with(path" in scope.where
    assert mem.retrieve("Where are the jobs located?", scope=seat).context.node_ids()
    Indexer(fresh_home).build_plan(Indexer(fresh_home).plan(full=True))  # rows still written
    assert not VectorStore(fresh_home.lancedb_path, None, None).has_scope_labels()


def test_facet_scores_through_a_vector_index_are_the_exact_scores(fresh_home, monkeypatch):
    """A scope searched through the facets' vector index (too large to hold) scores its
    candidate nodes on every row's full vector: the top nodes' scores are those of scoring
    every node of the scope exactly (ties may name other nodes with the same score)."""
    import query.retrieval
    from hltm_resources.stores.vectors import VectorStore
    from query import Memory

    VectorStore(fresh_home.lancedb_path, None, None).tidy(
        index_from=256, keys_from=256, exact_facets=(0, 0)
    )
    mem = Memory(fresh_home, log_queries=False)
    assert mem.vectors.vector_indexed("facets")
    scopes = [n for n, entry in mem.catalog().items() if entry[0] != "project"]
    keys = ["location", "skills", "seniority"]
    micro = mem.embedder.embed(keys)

    def scores(retriever, scope):
        nodes = retriever.facets(micro, mem.resolve(scope).where, scope, 5, 1, keys=keys)
        return [round(n.score, 5) for n in nodes]

    exact = {s: scores(mem.retriever, s) for s in scopes}
    monkeypatch.setattr(query.retrieval, "MAX_CACHED_ROWS", 0)  # every scope goes to LanceDB
    monkeypatch.setattr(query.retrieval, "MAX_FACET_TEXTS", 0)  # too many texts to hold
    mem = Memory(fresh_home, log_queries=False)
    for scope in scopes:
        mem.retriever.prepare("facets", mem.resolve(scope).where, scope)
        assert scores(mem.retriever, scope) == exact[scope], scope
    assert all(exact.values())
    held = [v for k, v in mem.retriever._cache.items() if k[-1] is query.retrieval.TextFacets]
    assert held and not any(held)  # searched through the index, not held


def held_text_facets(mem):
    """The :class:`TextFacets` a memory holds."""
    import query.retrieval

    cache = mem.retriever._cache
    return [v for k, v in cache.items() if k[-1] is query.retrieval.TextFacets and v is not None]


def facet_questions(mem):
    """Micro-query sets for :meth:`Retriever.facets`: keys alone, and keys with values the
    tree holds (so some nodes match every valued one)."""
    facets = mem.vectors.scan("facets", ["key", "value"]).to_pylist()
    values = sorted({(f["key"], f["value"]) for f in facets})
    locations = [f"location: {v}" for k, v in values if k == "location"][:2]
    skills = [f"skill: {v}" for k, v in values if k == "skill"][:2]
    assert locations and skills
    return [
        (["location", "skill", "seniority"], [False, False, False]),
        ([locations[0], "skill"], [True, False]),
        ([locations[0], skills[0]], [True, True]),
        ([locations[-1], skills[-1], "seniority"], [True, True, False]),
    ]


def facet_answers(mem, scope, micro_sets, top_k=1):
    """What :meth:`Retriever.facets` finds for each micro-query set, its cosines to 6 places:
    a text embedded in two batches may differ in the last bits of its vector."""

    def rounded(node):
        facets = [(f.text, round(f.score, 6), f.support, f.source_ids) for f in node.facets]
        return (node.node_id, round(node.score, 6), [round(b, 6) for b in node.best], facets)

    out = []
    for texts, valued in micro_sets:
        keys = [t.split(":")[0] for t in texts]
        nodes = mem.retriever.facets(
            mem.embedder.embed(texts),
            mem.resolve(scope).where,
            scope,
            1,
            top_k,
            valued=valued,
            match_cosine=0.9,
            keys=keys,
        )
        out.append([rounded(n) for n in nodes])
    return out


@pytest.mark.parametrize("top_k", [1, 2])
def test_facets_of_a_scope_held_as_distinct_texts_are_those_of_a_scope_held_whole(
    built_home, monkeypatch, top_k
):
    """A scope too large to hold with a vector per row keeps its facets' payload and one
    vector per distinct ``key: value`` text (what a facet embeds): every node of the scope is
    scored exactly, so the nodes, scores, matches and facet lists are those of a scope held
    whole, and so is the vocabulary a question is parsed with."""
    import query.retrieval
    from query import Memory

    mem = Memory(built_home, log_queries=False)
    micro_sets = facet_questions(mem)
    scopes = [n for n, entry in mem.catalog().items() if entry[0] != "project"]
    whole = {s: facet_answers(mem, s, micro_sets, top_k) for s in scopes}
    vocab = {s: mem._vocabulary(mem.resolve(s), mem.resolve(s).where).values for s in scopes}

    monkeypatch.setattr(query.retrieval, "MAX_CACHED_ROWS", 0)
    mem = Memory(built_home, log_queries=False)
    for scope in scopes:
        mem.retriever.prepare("facets", mem.resolve(scope).where, scope)
        assert facet_answers(mem, scope, micro_sets, top_k) == whole[scope], scope
        assert mem._vocabulary(mem.resolve(scope), mem.resolve(scope).where).values == vocab[scope]
    held = held_text_facets(mem)
    assert len(held) == len(scopes)
    assert all(len(h.texts) < len(h) for h in held)  # texts recur: fewer vectors than rows
    assert any(n[3] for answers in whole.values() for nodes in answers for n in nodes)
    assert any(len(nodes) > 1 for answers in whole.values() for nodes in answers)  # matches


def erase_before_reading_by_row_id(monkeypatch, home, view, where, erased):
    """Make :meth:`VectorStore.take` of ``view`` first erase (as another process would) the
    node of the first row asked for and compact the table (every row gets a new id): the row
    ids were named by a scan of the version before. The erased node goes to ``erased``."""
    from hltm_resources.stores.vectors import VectorStore

    take = VectorStore.take

    def erase_then_take(store, name, row_ids, columns):
        if name == view and not erased:
            rows = store.scan(name, ["node_id"], where, row_ids=True).to_pylist()
            erased.append(next(r["node_id"] for r in rows if r["_rowid"] == row_ids[0]))
            writer = VectorStore(home.lancedb_path, None, None)
            writer.delete_nodes(erased)
            writer.table(view).optimize()
        return take(store, name, row_ids, columns)

    monkeypatch.setattr(VectorStore, "take", erase_then_take)


def test_facets_are_searched_in_lancedb_when_the_table_changes_while_they_are_read(
    fresh_home, monkeypatch
):
    """Row ids hold for one version of a table: when a node is erased between the scan of a
    scope's facets and the read of their texts' vectors by row id, nothing is kept and the
    facets are searched in LanceDB; they are those a process started after the erasure finds
    (and holds)."""
    import query.retrieval
    from query import Memory

    monkeypatch.setattr(query.retrieval, "MAX_CACHED_ROWS", 0)
    mem = Memory(fresh_home, log_queries=False)
    micro_sets = facet_questions(mem)
    scope = next(n for n, entry in mem.catalog().items() if entry[0] == "account")
    erased: list[str] = []
    erase_before_reading_by_row_id(
        monkeypatch, fresh_home, "facets", mem.resolve(scope).where, erased
    )

    mem.retriever.prepare("facets", mem.resolve(scope).where, scope)
    assert erased
    assert not [k for k in mem.retriever._cache if k[-1] is query.retrieval.TextFacets]
    raced = facet_answers(mem, scope, micro_sets)
    assert erased[0] not in {n[0] for nodes in raced for n in nodes}
    after = Memory(fresh_home, log_queries=False)  # started after: holds them
    after.retriever.prepare("facets", mem.resolve(scope).where, scope)
    assert held_text_facets(after)
    assert raced == facet_answers(after, scope, micro_sets)


def test_summaries_are_read_by_node_id_when_the_table_changes_while_they_are_read(
    fresh_home, monkeypatch
):
    """The top summaries of a scope whose vectors are held are read by row id; a node erased
    since the scan that named those rows is not served, and the others are read by node id."""
    import query.retrieval
    from query import Memory

    monkeypatch.setattr(query.retrieval, "MAX_CACHED_ROWS", 0)
    mem = Memory(fresh_home, log_queries=False)
    scope = next(n for n, entry in mem.catalog().items() if entry[0] == "account")
    where = mem.resolve(scope).where
    qvec = mem.embedder.embed(["Where are the jobs usually located?"])[0]
    before = [i.node_id for i in mem.retriever.summaries(qvec, where, scope, 5)]
    mem = Memory(fresh_home, log_queries=False)
    mem.retriever._cached("summaries", where, scope, 10**6, query.retrieval.VECTORS_ONLY)
    erased: list[str] = []
    erase_before_reading_by_row_id(monkeypatch, fresh_home, "summaries", where, erased)

    raced = [i.node_id for i in mem.retriever.summaries(qvec, where, scope, 5)]
    assert erased == before[:1]
    assert raced == [n for n in before if n not in erased][: len(raced)]
    assert raced and erased[0] not in raced


def test_the_first_question_in_a_scope_too_large_to_hold_scores_its_facets_exactly(
    built_home, monkeypatch
):
    """The first question in a scope too large to hold reads its facets as
    :class:`TextFacets` (alongside its other views) and scores them as a scope held whole."""
    import query.retrieval
    from query import Memory

    question = "Which projects are in Amsterdam and need Python?"
    held = Memory(built_home, log_queries=False)
    scope = next(n for n, e in held.catalog().items() if e[0] == "account")
    whole = held.retrieve(question, scope=scope).context

    monkeypatch.setattr(query.retrieval, "MAX_CACHED_ROWS", 0)
    mem = Memory(built_home, log_queries=False)
    first = mem.retrieve(question, scope=scope).context
    assert held_text_facets(mem)
    assert [(n.node_id, round(n.score, 6)) for n in first.facets] == [
        (n.node_id, round(n.score, 6)) for n in whole.facets
    ]
    assert first.parsed == whole.parsed
