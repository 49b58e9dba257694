"""What one ``hltm index`` is made of, for the runner and the distributed index alike: the
keys of a level as its runs see them, and the result it reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from hltm_assets.partitions import KeyRange, TreePartitions
from hltm_resources.indexing.plan import Plan

#: The engine's usage counts a run's ``batch`` metadata carries.
USAGE_KEYS = ("engine_calls", "llm_calls", "prompt_tokens", "completion_tokens", "cache_hits")


@dataclass(frozen=True)
class LevelKeys:
    """A level's partitions as its runs see them: ``recorded`` are current nodes whose
    children the level below recorded, so they must be recorded too (see
    :func:`sibling_ranges`)."""

    ordered: list[str]
    nodes: dict
    recorded: list[str]
    parent_of: dict[str, str | None]
    position: dict[str, int]

    @classmethod
    def of(cls, tree: TreePartitions, level: str, keys: list[str], recorded_children: set[str]):
        ordered = tree.of_level(level).get_partition_keys()
        nodes = tree.topology.level(level)
        parents = {tree.topology.node(n).parent_id for n in recorded_children}
        to_build = set(keys)
        recorded = [k for k in ordered if nodes[k].node_id in parents and k not in to_build]
        parent_of = {k: nodes[k].parent_id for k in [*keys, *recorded]}
        return cls(ordered, nodes, recorded, parent_of, {k: i for i, k in enumerate(ordered)})

    def node_ids(self, span: KeyRange) -> list[str]:
        """The node ids of every partition from ``span.start`` to ``span.end``."""
        first, last = self.position[span.start], self.position[span.end]
        return [self.nodes[k].node_id for k in self.ordered[first : last + 1]]


@dataclass
class IndexResult:
    plan: Plan
    #: Nodes built per level (not the current ones a range run left as they were).
    built: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    runs: int = 0
    seconds: float = 0.0
    embedded_texts: int = 0
    embedding_calls: int = 0
    #: Seconds inside the asset bodies, by phase (engine, embed, write), summed over runs.
    phases: dict[str, float] = field(
        default_factory=lambda: {"engine": 0.0, "embed": 0.0, "write": 0.0}
    )
    plan_seconds: float = 0.0
    usage_encoding: str | None = None

    def __post_init__(self) -> None:
        for level in self.plan.schema.names:
            self.built.setdefault(level, 0)

    def add_batch(self, batch: dict, usage: bool = False) -> int:
        """Add a run's ``batch`` metadata (the same on every partition) to the timings, and
        with ``usage`` to the embedded texts and the engine's counts (runs in other processes
        report them only there); returns the nodes it built."""
        for phase in self.phases:
            self.phases[phase] += float(batch[f"{phase}_seconds"])
        if usage:
            self.embedded_texts += int(batch.get("embedded_texts", 0))
            for key in USAGE_KEYS:
                if isinstance(batch.get(key), int):
                    self.usage[key] = self.usage.get(key, 0) + batch[key]
        return int(batch["nodes_built"])

    def as_json(self) -> dict:
        """``leaves_built``, then ``<level plural>_built`` per parent level, then costs."""
        u = self.usage
        schema = self.plan.schema
        out = {"leaves_built": self.built[schema.leaf.name]}
        for level in schema.parents_bottom_up:
            out[f"{schema.level(level).plural}_built"] = self.built[level]
        return out | {
            "engine_calls": u.get("engine_calls", 0),
            "llm_calls": u.get("llm_calls", 0),
            "prompt_tokens": u.get("prompt_tokens", 0),
            "completion_tokens": u.get("completion_tokens", 0),
            "cache_hits": u.get("cache_hits", 0),
            "embedding_calls": self.embedding_calls,
            "embedded_texts": self.embedded_texts,
            "retries": u.get("retries", 0),
            "token_encoding": self.usage_encoding,
            "purged": len(self.plan.purge),
            "dagster_runs": self.runs,
            "failed_runs": self.failed,
            "seconds": round(self.seconds, 3),
        }
