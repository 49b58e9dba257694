"""What was true then: a question answered with the facts that held at a date.

Every leaf fact carries when it became true and, once a later document replaced it, when it
stopped (``valid_from`` / ``valid_to``, :meth:`MemoryAgents.facet_timeline`): the facts
holding now are the leaf's facets, the ones replaced its history. As of a date, a leaf holds
the facts whose validity covers it, which is what a rebuild from the documents dated up to
then would hold. At a parent the answer counts its leaves' facts that held then (parents
aggregate what holds now; their support counts are not history).

The question is read as any question is (what it asks, the values it names); only the facts
it is answered with differ. Nothing here writes, and nothing outside the scope is read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from hltm_resources.dates import as_of_date, instant, shown
from hltm_resources.engines.base import Analysis
from hltm_resources.engines.vocabulary import same_value_key
from hltm_resources.models import Facet
from hltm_resources.stores import database
from hltm_resources.text import humanize_key, join_human, plural_s

#: Facts listed for a leaf when the question names no attribute, and values per attribute at
#: a parent.
MAX_LISTED = 12


@dataclass(frozen=True)
class HeldFact(Facet):
    """A fact of leaf ``node_id``, current (``valid_to`` "") or replaced."""

    node_id: str = ""

    def held_at(self, moment: str) -> bool:
        # Undated facts hold throughout: nothing says when they began.
        return (not self.valid_from or self.valid_from <= moment) and (
            not self.valid_to or self.valid_to > moment
        )

    def span(self) -> str:
        since = f"since {shown(self.valid_from)}" if self.valid_from else "undated"
        if not self.valid_to:
            return f"{since}, still so"
        return f"{since} until {shown(self.valid_to)}"

    def reason(self) -> dict:
        return {
            "by": "fact",
            "key": self.key,
            "value": self.value,
            "source_ids": list(self.source_ids),
            "valid_from": self.valid_from or None,
            "valid_to": self.valid_to or None,
        }


def leaf_facts(
    settings, path: str, skip: Collection[str] = ()
) -> tuple[dict[str, str], list[HeldFact]]:
    """The leaves at or below ``path`` (node id -> name) and all their facts, current and
    replaced, read in one connection (bound parameters only); none of ``skip`` (nodes whose
    erasure is not complete in every store: never served)."""
    leaf = settings.schema.leaf.name
    with database.connect(settings.duckdb_path, read_only=True) as con:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE as_of_leaves AS SELECT node_id, name FROM mem_nodes "
            "WHERE level = ? AND input_hash <> 'invalidated' "
            "AND (path = ? OR starts_with(path, ?))",
            [leaf, path, path + "/"],
        )
        names = dict(con.execute("SELECT node_id, name FROM as_of_leaves").fetchall())
        rows = con.execute(
            "SELECT node_id, key, value, source_ids, coalesce(valid_from, ''), '' "
            "FROM mem_facets JOIN as_of_leaves USING (node_id) "
            "UNION ALL SELECT node_id, key, value, source_ids, coalesce(valid_from, ''), "
            "valid_to FROM mem_history JOIN as_of_leaves USING (node_id) "
            "ORDER BY 1, 2"
        ).fetchall()
    skip = set(skip)
    names = {n: name for n, name in names.items() if n not in skip}
    return names, [
        HeldFact(k, v, 1, tuple(s), f, t, node_id=n) for n, k, v, s, f, t in rows if n in names
    ]


@dataclass
class AsOfAnswer:
    answer: str
    references: list[str]
    reasons: dict[str, list[dict]]
    moment: str


def answer_as_of(
    settings,
    analysis: Analysis | None,
    scope_id: str,
    scope_name: str,
    scope_path: str,
    at_leaf: bool,
    as_of: object,
    read_now: Callable[[], tuple[str, list[str], list[str]]] | None = None,
    aliases: dict[str, str] | None = None,
    skip: Collection[str] = (),
) -> AsOfAnswer:
    """The answer to a question read as ``analysis``, with the facts of the scope's leaves
    that held at ``as_of`` (raises :class:`~hltm_resources.dates.AsOfError` for a date this
    cannot read).

    ``read_now``: the answer memory gives now, its references and the documents it is read
    from. At a leaf whose facts do not hold what is asked, that answer stands as of the date
    when every one of those documents is dated then or earlier (it was read from what
    existed then): a value only a passage states has no validity of its own.

    ``aliases``: keys the data shows to be another name of a canonical key (an export's
    ``duty_station`` is a location): each fact is read under its canonical key."""
    moment = as_of_date(as_of)
    day = shown(moment.removesuffix("T23:59:59"))
    names, facts = _read(settings, scope_path, aliases, skip)
    label = f"{scope_name} ({scope_id})"
    dated = [f.valid_from for f in facts if f.valid_from]
    if not facts or (dated and len(dated) == len(facts) and min(dated) > moment):
        first = f"; the earliest is from {shown(min(dated))}" if dated else ""
        return AsOfAnswer(
            f"Nothing is known of {label} as of {day}: no document of it is dated then or "
            f"earlier{first}.",
            [],
            {},
            moment,
        )
    held = [f for f in facts if f.held_at(moment)]
    leaves_then = sorted({f.node_id for f in held})
    key = analysis.asked_key if analysis else None
    constraints = list(analysis.constraints) if analysis else []
    # Leaves meeting every value the question names, by what they held then.
    by_leaf: dict[str, list[HeldFact]] = defaultdict(list)
    for f in held:
        by_leaf[f.node_id].append(f)
    meeting = [
        n for n in leaves_then if all(_holds(by_leaf[n], c.key, c.value) for c in constraints)
    ]
    reasons: dict[str, list[dict]] = {}
    if at_leaf:
        node = scope_id
        shown_facts = [f for f in by_leaf.get(node, []) if key is None or f.key == key]
        if not shown_facts and read_now is not None:
            said = _said_then(settings, read_now, moment)
            if said is not None:
                text, refs, reasons = said
                return AsOfAnswer(f"As of {day}: {text}", refs, reasons, moment)
        if not shown_facts:
            what = humanize_key(key) if key else "fact"
            return AsOfAnswer(
                f"As of {day}, no {what} of {label} is stated in memory.", [], {}, moment
            )
        shown_facts = _sources_by(settings, shown_facts[:MAX_LISTED], moment)
        reasons[node] = [f.reason() for f in shown_facts]
        parts = [
            f"{humanize_key(f.key)}: {f.value} ({f.span()}; {', '.join(f.source_ids)})"
            for f in shown_facts
        ]
        return AsOfAnswer(
            f"As of {day}, {label} held " + "; ".join(parts) + ".", [node], reasons, moment
        )
    counted = meeting if constraints else leaves_then
    if analysis is not None and analysis.form in ("list", "count") and constraints:
        cited = counted[:MAX_LISTED]
        for n in cited:
            reasons[n] = [
                f.reason() for f in by_leaf[n] if any(f.key == c.key for c in constraints)
            ]
        wanted = join_human(f"{humanize_key(c.key)} {c.value}" for c in constraints)
        if not counted:
            text = f"As of {day}, no {settings.schema.leaf.noun} of {label} held {wanted}."
        else:
            listed = join_human(f"{names.get(n, n)} ({n})" for n in cited)
            more = f" and {len(counted) - len(cited)} more" if len(counted) > len(cited) else ""
            many = plural_s(len(counted), settings.schema.leaf.noun)
            text = f"As of {day}, {many} of {label} held {wanted}: {listed}{more}."
        return AsOfAnswer(text, cited, reasons, moment)
    keys = [key] if key else sorted({f.key for n in counted for f in by_leaf[n]})[:MAX_LISTED]
    parts = []
    for k in keys:
        values = Counter()
        shown_value: dict[str, str] = {}  # one value, however each leaf writes it
        for n in counted:
            held = {same_value_key(k, f.value): f.value for f in by_leaf[n] if f.key == k}
            for same, written in held.items():
                values[same] += 1
                shown_value.setdefault(same, written)
        if not values:
            continue
        top = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LISTED]
        parts.append(
            f"{humanize_key(k)}: "
            + "; ".join(f"{shown_value[v]} ({c} of {len(counted)})" for v, c in top)
        )
    if not parts:
        what = humanize_key(key) if key else "fact"
        return AsOfAnswer(f"As of {day}, no {what} of {label} is stated in memory.", [], {}, moment)
    cited = counted[:MAX_LISTED]
    for n in cited:
        reasons[n] = [f.reason() for f in by_leaf[n] if f.key in keys]
    return AsOfAnswer(
        f"As of {day}, across {plural_s(len(counted), settings.schema.leaf.noun)} of {label}: "
        + "; ".join(parts)
        + ".",
        cited,
        reasons,
        moment,
    )


def _document_dates(settings, doc_ids: Collection[str]) -> dict[str, str]:
    """Each document's date as memory orders dates ("" undated, or gone)."""
    with database.connect(settings.duckdb_path, read_only=True) as con:
        dates = dict(
            con.execute(
                "SELECT doc_id, updated_at FROM sot_documents WHERE doc_id IN (SELECT unnest(?))",
                [sorted(doc_ids)],
            ).fetchall()
        )
    return {d: instant(dates.get(d)) for d in doc_ids}


def _sources_by(settings, facts: list[HeldFact], moment: str) -> list[HeldFact]:
    """``facts`` with only the documents dated by ``moment`` (or undated) as their sources:
    what stated them then (a fact still held cites later documents too)."""
    when = _document_dates(settings, {s for f in facts for s in f.source_ids})
    out = []
    for f in facts:
        then = tuple(s for s in f.source_ids if when[s] <= moment)
        out.append(replace(f, source_ids=then or f.source_ids))
    return out


def _said_then(
    settings, read_now: Callable[[], tuple[str, list[str], list[str]]], moment: str
) -> tuple[str, list[str], dict[str, list[dict]]] | None:
    """What memory answers now, if every document it is read from is dated by ``moment``."""
    text, refs, sources = read_now()
    if not refs or not sources:
        return None
    when = _document_dates(settings, sources)
    if any(not w or w > moment for w in when.values()):
        return None
    reason = {"by": "evidence", "source_ids": sources, "dated": when}
    return text, refs, {r: [reason] for r in refs}


def _holds(facts: list[HeldFact], key: str, value: str | None) -> bool:
    """Whether ``facts`` hold ``value`` of ``key`` (any value when None), by the identity
    of values every answer uses (:func:`same_value_key`)."""
    if value is None:
        return any(f.key == key for f in facts)
    wanted = same_value_key(key, value)
    return any(f.key == key and same_value_key(key, f.value) == wanted for f in facts)


def _read(
    settings, scope_path: str, aliases: dict[str, str] | None, skip: Collection[str] = ()
) -> tuple[dict[str, str], list[HeldFact]]:
    """:func:`leaf_facts`, each fact under its canonical key (``aliases``: keys the data
    shows to be another name of one, an export's ``duty_station`` is a location)."""
    names, facts = leaf_facts(settings, scope_path, skip)
    if aliases:
        facts = [replace(f, key=aliases.get(f.key, f.key)) for f in facts]
    return names, facts


def answer_when(
    settings,
    analysis: Analysis | None,
    scope_id: str,
    scope_name: str,
    scope_path: str,
    aliases: dict[str, str] | None = None,
    skip: Collection[str] = (),
) -> AsOfAnswer | None:
    """When a fact began or changed ("When did the role move to Berlin?", "When did the
    location change?"): the validity of the facts of the attribute asked (or of the value
    named), earliest first, with their documents. None when the question names no attribute
    whose facts the scope's leaves hold (it is then asked as any question)."""
    if analysis is None:
        return None
    named = [c for c in analysis.constraints if c.value]
    key = analysis.asked_key or (named[0].key if named else None)
    if key is None:
        return None
    value = next((c.value for c in named if c.key == key), None)
    names, facts = _read(settings, scope_path, aliases, skip)
    timeline = [f for f in facts if f.key == key and (value is None or _holds([f], key, value))]
    if not timeline:
        return None
    timeline.sort(key=lambda f: (f.node_id, f.valid_from or "", f.valid_to or "~"))
    by_leaf: dict[str, list[HeldFact]] = defaultdict(list)
    for f in timeline:
        by_leaf[f.node_id].append(f)
    # Each leaf holding the value named, with every value the attribute had there.
    for node in list(by_leaf):
        by_leaf[node] = sorted(
            (f for f in facts if f.node_id == node and f.key == key),
            key=lambda f: (f.valid_from or "", f.valid_to or "~"),
        )
    changed = {n: held for n, held in by_leaf.items() if len(held) > 1}
    if len(by_leaf) > 1 and changed:  # at a parent: the leaves where it changed
        by_leaf = changed
    what = humanize_key(key)
    parts, reasons = [], {}
    for node, held in list(by_leaf.items())[:MAX_LISTED]:
        steps = "; ".join(f"{f.value} {f.span()} ({', '.join(f.source_ids)})" for f in held)
        parts.append(steps if node == scope_id else f"{names.get(node, node)} ({node}): {steps}")
        reasons[node] = [f.reason() for f in held]
    more = len(by_leaf) - len(parts)
    tail = f"; and {more} more" if more > 0 else ""
    head = f"The {what} of {scope_name} ({scope_id})"
    text = f"{head}, by date: " + " | ".join(parts) + tail + "."
    return AsOfAnswer(text, list(reasons), reasons, "")


def answer_changes(
    settings,
    analysis: Analysis | None,
    scope_id: str,
    scope_name: str,
    scope_path: str,
    since: str,
    aliases: dict[str, str] | None = None,
    skip: Collection[str] = (),
) -> AsOfAnswer:
    """What changed since ``since`` (a date): each fact a document dated after it replaced
    or ended, with what replaced it, and how many facts were first stated after it (of the
    attribute asked, if one is)."""
    key = analysis.asked_key if analysis else None
    names, facts = _read(settings, scope_path, aliases, skip)
    facts = [f for f in facts if key is None or f.key == key]
    label = f"{scope_name} ({scope_id})"
    successors: dict[tuple[str, str, str], list[HeldFact]] = defaultdict(list)
    for f in facts:
        if f.valid_from:
            successors[(f.node_id, f.key, f.valid_from)].append(f)
    changes: list[tuple[str, str, HeldFact, list[HeldFact]]] = []
    replacing = set()
    for f in facts:
        if f.valid_to and f.valid_to > since:
            after = successors.get((f.node_id, f.key, f.valid_to), [])
            replacing.update(id(a) for a in after)
            changes.append((f.valid_to, f.node_id, f, after))
    changes.sort(key=lambda c: (c[0], c[1], c[2].key))
    added = [f for f in facts if f.valid_from and f.valid_from > since and id(f) not in replacing]
    day = shown(since)
    if not changes and not added:
        return AsOfAnswer(f"Nothing in {label} changed since {day}.", [], {}, since)
    parts, reasons = [], defaultdict(list)
    for when, node, old, new in changes[:MAX_LISTED]:
        now = join_human(f"{n.value} ({', '.join(n.source_ids)})" for n in new) or "nothing"
        parts.append(
            f"on {shown(when)}, the {humanize_key(old.key)} of {names.get(node, node)} ({node}) "
            f"went from {old.value} to {now}"
        )
        reasons[node] += [old.reason(), *(n.reason() for n in new)]
    text = f"Since {day} in {label}: " + "; ".join(parts) if parts else f"Since {day} in {label}"
    if len(changes) > MAX_LISTED:
        text += f"; and {len(changes) - MAX_LISTED} more changes"
    if added:
        leaves = sorted({f.node_id for f in added})
        noun = settings.schema.leaf.noun
        text += (
            f"{'; and ' if parts else ': '}{plural_s(len(added), 'fact')} first stated since "
            f"then, in {plural_s(len(leaves), noun)}"
        )
        for node in leaves[: max(0, MAX_LISTED - len(reasons))]:
            reasons[node] += [f.reason() for f in added if f.node_id == node]
    return AsOfAnswer(text + ".", list(reasons), dict(reasons), since)
