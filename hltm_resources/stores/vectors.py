"""LanceDB tables of embedded memory items: ``facets``, ``qa`` and ``summaries``.

Each row carries ``node_id``, ``level``, ``path``, ``text`` and ``vector`` (the public
contract) plus the item's payload, so a search result is self-contained. Each table records
the embedding model and dimension in its schema metadata; writing or searching with another
model is an error that names both.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from hltm_resources.ids import check_raw_id, parse_node_id
from hltm_resources.schema import TreeSchema

TABLES = ("facets", "qa", "summaries")
MODEL_KEY = b"hltm.embed_model"
DIM_KEY = b"hltm.dim"
_DELETE_CHUNK = 400

_PAYLOAD: dict[str, list[pa.Field]] = {
    "facets": [
        pa.field("key", pa.string()),
        pa.field("value", pa.string()),
        pa.field("support", pa.int32()),
        pa.field("source_ids", pa.list_(pa.string())),
    ],
    "qa": [pa.field("answer", pa.string()), pa.field("source_ids", pa.list_(pa.string()))],
    "summaries": [
        pa.field("detailed", pa.string()),
        pa.field("source_ids", pa.list_(pa.string())),
        pa.field("name", pa.string()),
        pa.field("leaf_count", pa.int32()),
    ],
}


class EmbeddingModelMismatch(RuntimeError):
    """Vectors of one embedding model met another model."""


def table_schema(table: str, model_id: str, dim: int) -> pa.Schema:
    fields = [
        pa.field("node_id", pa.string()),
        pa.field("level", pa.string()),
        pa.field("path", pa.string()),
        pa.field("text", pa.string()),
        *_PAYLOAD[table],
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ]
    return pa.schema(fields, metadata={MODEL_KEY: model_id.encode(), DIM_KEY: str(dim).encode()})


def sql_quote(value: str) -> str:
    """A SQL string literal; callers pass validated ids only, quoting is defense in depth."""
    return "'" + value.replace("'", "''") + "'"


def node_filter(node_ids: Iterable[str]) -> str:
    ids = [str(parse_node_id(n)) for n in node_ids]
    return "node_id IN (" + ", ".join(sql_quote(n) for n in ids) + ")"


def subtree_filter(path: str) -> str:
    """Rows of the node at ``path`` and of every node below it.

    ``starts_with`` rather than ``LIKE``: ids may contain ``_``, a LIKE wildcard.
    """
    for part in path.split("/"):
        check_raw_id(part, "path segment")
    return f"(path = {sql_quote(path)} OR starts_with(path, {sql_quote(path + '/')}))"


def level_filter(levels: Sequence[str], schema: TreeSchema) -> str:
    bad = [lv for lv in levels if not schema.has(lv)]
    if bad:
        raise ValueError(f"unknown levels {bad}: the tree has {', '.join(schema.names)}")
    return "level IN (" + ", ".join(sql_quote(lv) for lv in levels) + ")"


class VectorStore:
    """The three LanceDB tables of one home, bound to one embedding model."""

    def __init__(
        self,
        path: Path,
        model_id: str | None,
        dim: int | None,
        read_consistency: timedelta | None = None,
    ):
        """``model_id=None`` opens tables read/delete-only, without the model check.

        ``read_consistency``: how often a long-lived reader looks for newer table versions
        (None: the version current when a table was opened).
        """
        self.path = Path(path)
        self.read_consistency = read_consistency
        self.model_id = model_id
        self.dim = dim
        self._db = None
        self._tables: dict[str, object] = {}

    @property
    def db(self):
        if self._db is None:
            self.path.mkdir(parents=True, exist_ok=True)
            self._db = lancedb.connect(
                str(self.path), read_consistency_interval=self.read_consistency
            )
        return self._db

    def exists(self, name: str) -> bool:
        return name in self.db.table_names()

    def table_model(self, name: str) -> tuple[str | None, int | None]:
        """The embedding model id and dimension a table was built with."""
        meta = self.db.open_table(name).schema.metadata or {}
        model = meta.get(MODEL_KEY)
        dim = meta.get(DIM_KEY)
        return (model.decode() if model else None, int(dim) if dim else None)

    def check_model(self) -> None:
        """Raise :class:`EmbeddingModelMismatch` if an existing table holds another model."""
        for name in TABLES:
            if self.exists(name):
                self._tables.pop(name, None)
                self.table(name)

    def table(self, name: str, create: bool = False):
        """Open (or create) a table after checking it holds this store's model."""
        if name in self._tables:
            return self._tables[name]
        if not self.exists(name):
            if not create or self.model_id is None:
                raise FileNotFoundError(
                    f"LanceDB table {name!r} does not exist under {self.path}: build memory "
                    "first (hltm index)"
                )
            tbl = self.db.create_table(name, schema=table_schema(name, self.model_id, self.dim))
        else:
            tbl = self.db.open_table(name)
            model, dim = self.table_model(name)
            if self.model_id is not None and (model, dim) != (self.model_id, self.dim):
                raise EmbeddingModelMismatch(
                    f"LanceDB table {name!r} holds vectors of embedding model {model!r} "
                    f"(dim {dim}), but this run uses {self.model_id!r} (dim {self.dim}); "
                    "vectors of different models never mix: rebuild with the table's model, "
                    "or start a new home (or run `hltm index --full --reset-vectors`)"
                )
        self._tables[name] = tbl
        return tbl

    def replace_nodes(self, node_ids: Sequence[str], rows: dict[str, pa.Table]) -> None:
        """Delete every row of ``node_ids`` and add ``rows`` (per table)."""
        for name in TABLES:
            tbl = self.table(name, create=True)
            self._delete(tbl, node_ids)
            data = rows.get(name)
            if data is not None and data.num_rows:
                tbl.add(data.cast(tbl.schema))

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        for name in TABLES:
            if self.exists(name):
                self._delete(self.table(name), node_ids)

    @staticmethod
    def _delete(tbl, node_ids: Sequence[str]) -> None:
        ids = list(node_ids)
        for start in range(0, len(ids), _DELETE_CHUNK):
            tbl.delete(node_filter(ids[start : start + _DELETE_CHUNK]))

    def scan(self, name: str, columns: Sequence[str], where: str | None = None) -> pa.Table:
        """Rows of a table (no vector search), optionally filtered inside the query."""
        tbl = self.db.open_table(name)
        query = tbl.search().select(list(columns))
        if where:
            query = query.where(where)
        return query.limit(max(tbl.count_rows(), 1)).to_arrow()

    def node_ids(self, name: str) -> set[str]:
        if not self.exists(name):
            return set()
        return set(self.scan(name, ["node_id"]).column("node_id").to_pylist())

    def counts_by_node(self, name: str) -> dict[str, int]:
        if not self.exists(name):
            return {}
        counts: dict[str, int] = {}
        for n in self.scan(name, ["node_id"]).column("node_id").to_pylist():
            counts[n] = counts.get(n, 0) + 1
        return counts

    def search(
        self, name: str, vector: np.ndarray, where: str, limit: int, columns: Sequence[str]
    ) -> pa.Table:
        """Cosine search restricted by ``where`` inside the query (prefilter)."""
        tbl = self.table(name)
        return (
            tbl.search(vector.astype(np.float32), vector_column_name="vector")
            .distance_type("cosine")
            .where(where, prefilter=True)
            .select([*columns, "_distance"])
            .limit(limit)
            .to_arrow()
        )

    def drop_all(self) -> None:
        """Drop the three tables (switching embedding models: everything is rebuilt)."""
        for name in TABLES:
            if self.exists(name):
                self.db.drop_table(name)
        self._tables.clear()

    def purge_history(self) -> None:
        """Compact fragments and drop every old version, so deleted rows leave no copy."""
        for name in TABLES:
            if not self.exists(name):
                continue
            # Compaction rewrites fragments without the deleted rows; pruning with a zero
            # retention then removes every older version's files. A reader holding an older
            # version fails its query (and retries on the latest): erasure wins over it.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                self.table(name).optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

    def tidy(self, keep_versions_for: timedelta = timedelta(hours=1)) -> None:
        """Compact small fragments and drop versions older than ``keep_versions_for``."""
        for name in TABLES:
            if self.exists(name):
                self.table(name).optimize(cleanup_older_than=keep_versions_for)
