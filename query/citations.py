"""Why an answer cites each node: the constraint of the question it met (by its facet, or by
a document of its that states it), the fact it holds, the leaves it groups, the distribution
it counts, else the view that retrieved it. Read off what the answer was given
(:class:`~hltm_resources.engines.base.RetrievedContext`), never guessed after the fact."""

from __future__ import annotations

from collections.abc import Sequence

from hltm_resources.engines.base import RetrievedContext

#: The views of the retrieved context, in the order a reason names them.
VIEWS = ("facets", "qa", "summaries", "evidence")


def why_cited(references: Sequence[str], context: RetrievedContext) -> dict[str, list[dict]]:
    """Per cited node id, the reasons it was cited, each a JSON-ready dict with ``by``:

    - ``facet``: it met the constraint ``key: asked`` by its facet ``key: value``;
    - ``evidence``: it met ``key: value`` by document ``doc_id``, whose text states it;
    - ``subject``: one of the leaves the question is about (no value to check);
    - ``finding``: it holds the fact ``key: value`` the answer states, from ``source_ids``
      (``quote``: the words read from a passage, when read from one);
    - ``group``: it holds ``leaves`` that meet the question;
    - ``distribution``: the answer counts ``key`` over ``counted`` leaves;
    - ``retrieved``: no constraint or fact names it; ``view`` retrieved it with ``score``."""
    matches = {m.node_id: m for m in context.matches or ()}
    findings: dict[str, list] = {}
    for f in context.findings:
        findings.setdefault(f.node_id, []).append(f)
    out: dict[str, list[dict]] = {}
    for ref in references:
        reasons: list[dict] = []
        match = matches.get(ref)
        if match is not None:
            held = match.held or ("",) * len(match.met)
            for c, how, value in zip(match.met, match.how, held, strict=False):
                if how == "facet":
                    reasons.append(
                        {"by": "facet", "key": c.key, "asked": c.value, "value": value or c.value}
                    )
                else:
                    reasons.append(
                        {"by": "evidence", "key": c.key, "value": c.value, "doc_id": how}
                    )
            if not match.met:
                reasons.append({"by": "subject"})
        for f in findings.get(ref, ()):
            reason = {"by": "finding", "key": f.key, "value": f.value}
            reason |= {"source_ids": list(f.source_ids), "quote": f.quote}
            reasons.append(reason)
        if ref in context.groups:
            reasons.append({"by": "group", "leaves": list(context.groups[ref][1])})
        if ref == context.scope:
            for key in context.distributions:
                reasons.append(
                    {"by": "distribution", "key": key, "counted": context.leaves_counted}
                )
        if not reasons:
            reasons = _retrieved(ref, context)
        out[ref] = reasons
    return out


def _retrieved(ref: str, context: RetrievedContext) -> list[dict]:
    """The views that retrieved ``ref``, each with its best score there."""
    items = {
        "facets": context.facets,
        "qa": context.qa,
        "summaries": context.summaries,
        "evidence": context.evidence,
    }
    out = []
    for view in VIEWS:
        scores = [i.score for i in items[view] if i.node_id == ref]
        if scores:
            out.append({"by": "retrieved", "view": view, "score": round(max(scores), 4)})
    return out
