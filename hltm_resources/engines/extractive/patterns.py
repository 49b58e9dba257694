"""Answerable questions synthesized from adaptation patterns (mined from the query log).

A pattern is a question template with one slot per facet key, e.g.
``which projects required <skill>``. A node answers a pattern when it holds facets for every
slot; the pattern is then filled from the node's own data, never from anywhere else.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from hltm_resources.engines.base import Hints
from hltm_resources.engines.extractive.questions import asked_keys
from hltm_resources.models import Facet, Memory, NodeInfo, QAPair
from hltm_resources.text import fold, join_human

SLOT = re.compile(r"<([a-z_][a-z0-9_]*)>")
MAX_PATTERN_QA = 16
PER_PATTERN = 4


def pattern_slots(pattern: str) -> list[str]:
    """The facet keys a pattern's slots name, in order."""
    return SLOT.findall(pattern)


def fill(pattern: str, values: dict[str, str]) -> str:
    """The pattern with each ``<key>`` replaced by ``values[key]``, first letter capitalized."""
    text = SLOT.sub(lambda m: values[m.group(1)], pattern)
    return text[:1].upper() + text[1:] + ("" if text.endswith("?") else "?")


def leaf_pattern_qa(node: NodeInfo, by_key: dict[str, list[Facet]], hints: Hints) -> list[QAPair]:
    """Questions of the active patterns this leaf can answer, answered from its facets."""
    out: list[QAPair] = []
    for pattern in hints.patterns:
        slots = pattern_slots(pattern)
        # Summary-style patterns (no slot) are about aggregates: parents answer them.
        if not slots or any(k not in by_key for k in slots):
            continue
        # One question per combination of values (a project requires several skills and may
        # have several rejection reasons), a few per pattern.
        combos = itertools.product(*(by_key[k] for k in slots))
        for combo in itertools.islice(combos, PER_PATTERN):
            choice = dict(zip(slots, combo, strict=True))
            values = {k: f.value for k, f in choice.items()}
            sources = tuple(sorted({s for f in choice.values() for s in f.source_ids}))
            facts = "; ".join(f"{k.replace('_', ' ')}: {values[k]}" for k in slots)
            out.append(
                QAPair(fill(pattern, values), f"{node.name} ({node.node_id}): {facts}", sources)
            )
            if len(out) >= MAX_PATTERN_QA:
                return out
    return out


def parent_pattern_qa(
    node: NodeInfo,
    children: Sequence[tuple[NodeInfo, Memory]],
    by_key: dict[str, list[Facet]],
    total: int,
    hints: Hints,
    count_key: str,
) -> list[QAPair]:
    """Pattern questions filled with the parent's most supported values, answered by children."""
    out: list[QAPair] = []
    names = {info.node_id: info.name for info, _ in children}
    for pattern in hints.patterns:
        slots = pattern_slots(pattern)
        if not slots:
            # A recurring summary question ("where are the jobs usually located"): answered
            # by this node's distribution of the key it asks about.
            keys = asked_keys(pattern, set(by_key) - {count_key})
            if keys:
                facets = sorted(by_key[keys[0]], key=lambda f: (-f.support, fold(f.value)))
                answer = "; ".join(
                    f"{f.value} ({f.support} of {total} projects)" for f in facets[:5]
                )
                out.append(
                    QAPair(
                        fill(pattern, {}),
                        answer,
                        tuple(sorted({s for f in facets for s in f.source_ids})),
                    )
                )
            continue
        if any(k not in by_key for k in slots):
            continue
        top = {k: sorted(by_key[k], key=lambda f: (-f.support, fold(f.value)))[0] for k in slots}
        common = set.intersection(*(set(top[k].source_ids) for k in slots))
        listed = join_human(f"{names[c]} ({c})" for c in sorted(common) if c in names)
        support = min(top[k].support for k in slots)
        answer = f"{listed} (up to {support} of {total} projects)" if listed else "none"
        out.append(
            QAPair(fill(pattern, {k: top[k].value for k in slots}), answer, tuple(sorted(common)))
        )
        if len(out) >= MAX_PATTERN_QA:
            break
    return out
