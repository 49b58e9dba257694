"""What the nearline sensor asks for, decided from the plan (pure; tested without Dagster).

- Leaves whose inputs changed are requested at once, with the input hash in the run key (a
  second tick, or a second sensor, asking for the same content collapses onto the same key).
- Parents normally follow through Dagster's eager automation. A parent whose stored input hash
  still differs from its children's after ``grace`` seconds (automation missed it: a child was
  rebuilt right after the parent) is requested by the sensor. A parent emptied by a deletion is
  requested at once: eager never fires on a deletion.
- If the tree changed since the code location loaded (new, deleted or moved nodes), nothing is
  requested: partitions and mappings are stale until the location is reloaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hltm_resources.indexing.plan import EMPTIED, Plan, PlanItem
from hltm_resources.models import Topology, stable_hash

GRACE_S = 180.0


@dataclass(frozen=True)
class Request:
    level: str
    raw_id: str
    run_key: str
    reason: str
    #: Last key of a partition range (contiguous in partition order), or None for one key.
    end: str | None = None


@dataclass
class Decision:
    requests: list[Request] = field(default_factory=list)
    skip_reason: str | None = None
    cursor: dict = field(default_factory=dict)


def topology_change(loaded: Topology, now: Topology) -> str | None:
    """A description of how the tree changed since ``loaded``, or None if it did not."""
    parts = []
    for level in now.schema.names:
        a, b = loaded.level(level), now.level(level)
        added, removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
        moved = sorted(k for k in set(a) & set(b) if a[k].parent_id != b[k].parent_id)
        for what, ids in (("new", added), ("deleted", removed), ("moved", moved)):
            if ids:
                parts.append(
                    f"{len(ids)} {what} {level}(s) ({', '.join(ids[:3])}"
                    f"{', ...' if len(ids) > 3 else ''})"
                )
    return "; ".join(parts) or None


def decide(
    plan: Plan,
    loaded: Topology,
    now_topology: Topology,
    cursor: dict,
    now: float,
    grace: float = GRACE_S,
    order: list[str] | None = None,
) -> Decision:
    """The runs to request now. ``order``: the leaf partition keys in partition order (enables
    range runs for contiguous changed leaves)."""
    change = topology_change(loaded, now_topology)
    if change:
        return Decision(
            skip_reason=(
                f"the tree changed since the code location loaded: {change}. Reload it "
                "(hltm reload, or 'Reload definitions' in the UI); nothing is built against a "
                "stale mapping."
            ),
            cursor=cursor,
        )
    decision = Decision(requests=leaf_requests(plan, order))
    parents, still_stale = parent_requests(plan, cursor.get("stale_since", {}), now, grace)
    decision.requests += parents
    decision.cursor = {"stale_since": still_stale}
    if not decision.requests:
        waiting = f"; {len(still_stale)} parent(s) left to automation" if still_stale else ""
        decision.skip_reason = f"memory is up to date with the source of truth{waiting}"
    return decision


def leaf_requests(plan: Plan, order: list[str] | None) -> list[Request]:
    """One run per changed leaf, or with ``order`` one run per contiguous range of them (a
    bulk edit or new hints: one run per range instead of one per leaf)."""
    leaves = plan.build[plan.schema.leaf.name]
    if order is None or len(leaves) <= 1:
        return [_one(item, item.reason) for item in leaves]
    by_key = {i.raw_id: i for i in leaves}
    position = {k: n for n, k in enumerate(order)}
    keys = sorted(by_key, key=lambda k: position.get(k, -1))
    runs: list[list[str]] = []
    for k in keys:
        if runs and position.get(k, -2) == position.get(runs[-1][-1], -3) + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    out = []
    for run in runs:
        first = by_key[run[0]]
        if len(run) == 1:
            out.append(_one(first, first.reason))
            continue
        digest = stable_hash([by_key[k].input_hash for k in run])[:16]
        key = f"{first.level}:{run[0]}..{run[-1]}:{digest}"
        reason = f"{len(run)} leaves: {first.reason}"
        out.append(Request(first.level, run[0], key, reason, end=run[-1]))
    return out


def parent_requests(
    plan: Plan, first_seen: dict[str, list], now: float, grace: float
) -> tuple[list[Request], dict[str, list]]:
    """Parents automation should have rebuilt by now, and those emptied by a deletion (eager
    never fires on a deletion); plus, per stale parent, since when (the new cursor)."""
    requests: list[Request] = []
    still_stale: dict[str, list] = {}
    for level in plan.schema.parents_bottom_up:
        for item in plan.build[level]:
            if not item.input_hash:
                continue  # a child is about to be rebuilt; automation follows it
            if item.reason == EMPTIED:
                requests.append(_one(item, item.reason))
                continue
            key = _run_key(item)
            since = first_seen.get(item.node_id)
            if since is None or since[0] != key:
                since = [key, now]
            still_stale[item.node_id] = since
            if now - since[1] >= grace:
                why = f"{item.reason}; still stale after {grace:.0f} s (automation did not follow)"
                requests.append(_one(item, why))
    return requests, still_stale


def _run_key(item: PlanItem) -> str:
    return f"{item.node_id}:{item.input_hash[:16]}"


def _one(item: PlanItem, reason: str) -> Request:
    return Request(item.level, item.raw_id, _run_key(item), reason)
