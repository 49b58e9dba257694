"""LanceDB tables of embedded memory items: ``facets``, ``qa`` and ``summaries``.

Each row carries ``node_id``, ``level``, ``path``, ``text`` and ``vector`` (the public
contract) plus the item's payload, so a search result is self-contained. Each table records
the embedding model and dimension in its schema metadata; writing or searching with another
model is an error that names both.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import FTS, BTree, IvfPq, LabelList
from lancedb.query import MultiMatchQuery

from hltm_resources.embedding import setting_for_model
from hltm_resources.env import number
from hltm_resources.ids import check_raw_id, is_doc_id, node_id, parse_node_id
from hltm_resources.models import Memory, NodeInfo
from hltm_resources.schema import TreeSchema

TABLES = ("facets", "qa", "summaries", "evidence")
#: Columns of the evidence table with LanceDB's own full-text (BM25) index.
FTS_COLUMNS = {"evidence": ("text", "context")}
#: Per row, the ids of its node and of the node's ancestors (:func:`scope_labels`), with a
#: label-list index: a scope's filter (:func:`scope_filter`). Tables written before it have
#: none; their scopes are filtered by path (:func:`subtree_filter`), the same rows.
SCOPES_COLUMN = "scopes"
MODEL_KEY = b"hltm.embed_model"
DIM_KEY = b"hltm.dim"
_DELETE_CHUNK = 400
#: A table gets an approximate nearest-neighbour index (IVF-PQ, cosine) on its vectors once it
#: holds this many rows (made by :meth:`VectorStore.tidy`, at the end of an index). Only
#: scopes too large to search in numpy go to LanceDB's search (``query.retrieval``); their
#: subtree filter stays a prefilter, so the index changes which in-scope rows are candidates,
#: never whether a row outside the scope can be one. Override: ``HLTM_VECTOR_INDEX_MIN_ROWS``.
VECTOR_INDEX_MIN_ROWS = 200_000
#: A scope's facets are searched exactly, over their distinct texts (``query.retrieval``'s
#: ``TextFacets``), up to this many rows and this many distinct texts; only a scope past either
#: is searched through the facets table's vector index. So that table gets the index only once
#: it holds that many rows or texts (a scope holds no more than its table). Facet texts repeat:
#: at 100k leaves, 1.28M facet rows held 50k distinct texts, one of them 80k times. An IVF
#: index puts a text's copies in one partition, and building it took 1.2 GB more than the
#: build had, for an index no question read.
EXACT_FACET_ROWS = 2_000_000
EXACT_FACET_TEXTS = 100_000
#: Columns a table of ``KEY_INDEX_MIN_ROWS`` rows or more gets a B-tree index on: the subtree
#: prefilter of a table without scope labels is on ``path`` (LanceDB answers ``starts_with``
#: from it: a full-text search in a seat of a 100k-leaf tree took 29 ms without it, 5 ms with
#: it), and rows are read by node or passage id. Such a table's ``scopes`` get a label index.
KEY_COLUMNS = ("path", "node_id", "passage_id")
KEY_INDEX_MIN_ROWS = 50_000
#: An incremental index compacts a table and folds its new rows into its indexes (LanceDB's
#: ``optimize``, :meth:`VectorStore.tidy`) only once this share of its rows is outside an
#: index or it has this many small fragments. Until then a vector or full-text search reads
#: the indexed rows through the index and the others flat, so no row is missed. Compacting
#: took 2.7-3.4 s of a 25 s churn of 1 % of 10k leaves, which still rewrites about 6.5 % of
#: the facet rows (its seats' and accounts'), so such a churn compacts them (BENCHMARKS.md).
#: A full index always compacts.
TIDY_UNINDEXED_SHARE = 0.05
TIDY_SMALL_FRAGMENTS = 48
#: IVF partitions searched per query at least; more, up to ``ANN_MAX_NPROBES``, when the
#: filter leaves too few rows in them. Without a bound (``maximum_nprobes(0)``) LanceDB
#: searched all of them for some questions in an account of 30k projects: 220 of 296
#: partitions, twice the time, and the same share of the true top 400 (measured at 100k
#: at commit a679cfa).
#: Only scopes too large to hold are searched here, so 80 partitions fill any limit.
ANN_NPROBES = 20
ANN_MAX_NPROBES = 80
#: Candidates read per result and re-ranked on their full vectors (PQ distances are coarse).
#: A search whose hits are scored again on their full vectors by the caller may skip it
#: (``refine=None``; see ``Retriever.facets``).
ANN_REFINE = 4

_PAYLOAD: dict[str, list[pa.Field]] = {
    "facets": [
        pa.field("key", pa.string()),
        pa.field("value", pa.string()),
        pa.field("support", pa.int32()),
        pa.field("source_ids", pa.list_(pa.string())),
        # When the fact became true (a leaf's; "" at parents): rows are what holds now.
        pa.field("valid_from", pa.string()),
    ],
    "qa": [pa.field("answer", pa.string()), pa.field("source_ids", pa.list_(pa.string()))],
    "summaries": [
        pa.field("detailed", pa.string()),
        pa.field("source_ids", pa.list_(pa.string())),
        pa.field("name", pa.string()),
        pa.field("leaf_count", pa.int32()),
    ],
    "evidence": [
        pa.field("passage_id", pa.string()),
        pa.field("source_ids", pa.list_(pa.string())),
        pa.field("context", pa.string()),
        pa.field("updated_at", pa.string()),
        pa.field("kind", pa.string()),
    ],
}
#: Weight of a passage's context against the passage itself, in both searches of evidence.
CONTEXT_BOOST = 0.5
_WORDS = re.compile(r"\w+")
VERSION_TTL_S = 1.0
#: Tables with a second vector: the embedding of each row's ``context``.
CONTEXT_VECTOR = {"evidence": "context_vector"}


def vector_matrix(table: pa.Table, column: str = "vector") -> np.ndarray:
    """A vector column of a scan as an (n, dim) float32 array."""
    dim = table.schema.field(column).type.list_size
    flat = table.column(column).combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(-1, dim)


def _approximate(query, refine: int | None = ANN_REFINE):
    """Search settings for a table with a vector index (ignored by a brute-force search)."""
    query = query.minimum_nprobes(ANN_NPROBES).maximum_nprobes(ANN_MAX_NPROBES)
    return query if refine is None else query.refine_factor(refine)


def vector_items(node: NodeInfo, memory: Memory, levels: Sequence[str]) -> dict[str, list[dict]]:
    """Per table, the rows a node's memory becomes (without vectors): ``text`` is what gets
    embedded (a facet as ``key: value``, a QA pair by its question, the summary by its
    sentence, a passage by itself; a passage's ``context_vector`` is its vector with its
    neighbours', see :func:`hltm_resources.indexing.indexer.context_vectors`). ``levels``: the
    tree's levels, root first (for :func:`scope_labels`)."""
    base = {
        "node_id": node.node_id,
        "level": node.level,
        "path": node.path,
        SCOPES_COLUMN: scope_labels(node.path, levels),
    }
    payload = _payloads(memory)
    payload["summaries"][0] |= {"name": node.name}
    return {name: [base | row for row in rows] for name, rows in payload.items()}


def embedded_texts(memory: Memory) -> dict[str, list[str]]:
    """Per table, the texts a node's memory has vectors of (what ``verify`` compares)."""
    return {name: [row["text"] for row in rows] for name, rows in _payloads(memory).items()}


def _payloads(memory: Memory) -> dict[str, list[dict]]:
    summary = memory.summary
    return {
        "facets": [
            {
                "text": f.text,
                "key": f.key,
                "value": f.value,
                "support": f.support,
                "source_ids": list(f.source_ids),
                "valid_from": f.valid_from,
            }
            for f in memory.facets
        ],
        "qa": [
            {"text": q.question, "answer": q.answer, "source_ids": list(q.source_ids)}
            for q in memory.qa
        ],
        "summaries": [
            {
                "text": summary.concise,
                "detailed": summary.detailed,
                "source_ids": list(summary.source_ids),
                "leaf_count": memory.leaf_count,
            }
        ],
        "evidence": [
            {
                "text": p.text,
                "context": p.context,
                "passage_id": p.passage_id,
                "source_ids": [p.doc_id],
                "updated_at": p.updated_at,
                "kind": p.kind,
            }
            for p in memory.evidence
        ],
    }


class EmbeddingModelMismatch(RuntimeError):
    """Vectors of one embedding model met another model."""


def table_schema(table: str, model_id: str, dim: int) -> pa.Schema:
    fields = [
        pa.field("node_id", pa.string()),
        pa.field("level", pa.string()),
        pa.field("path", pa.string()),
        pa.field(SCOPES_COLUMN, pa.list_(pa.string())),
        pa.field("text", pa.string()),
        *_PAYLOAD[table],
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ]
    if table in CONTEXT_VECTOR:
        fields.append(pa.field(CONTEXT_VECTOR[table], pa.list_(pa.float32(), dim)))
    return pa.schema(fields, metadata={MODEL_KEY: model_id.encode(), DIM_KEY: str(dim).encode()})


def sql_quote(value: str) -> str:
    """A SQL string literal; callers pass validated ids only, quoting is defense in depth."""
    return "'" + value.replace("'", "''") + "'"


def node_filter(node_ids: Iterable[str]) -> str:
    ids = [str(parse_node_id(n)) for n in node_ids]
    return "node_id IN (" + ", ".join(sql_quote(n) for n in ids) + ")"


def passage_filter(passage_ids: Iterable[str]) -> str:
    """Rows of the given evidence passages (ids are checked document ids plus ``#n``)."""
    ids = []
    for p in passage_ids:
        doc, _, n = p.rpartition("#")
        if not (is_doc_id(doc) and n.isdigit()):
            raise ValueError(f"passage id {p[:80]!r} is malformed")
        ids.append(p)
    return "passage_id IN (" + ", ".join(sql_quote(p) for p in ids) + ")"


def scope_labels(path: str, levels: Sequence[str]) -> list[str]:
    """The ids of the node at ``path`` and of its ancestors (``levels``: root first): the
    scopes a row is in."""
    return [node_id(level, raw) for level, raw in zip(levels, path.split("/"), strict=False)]


def scope_filter(scope_id: str) -> str:
    """Rows of the node ``scope_id`` and of every node below it, by their scope labels: one
    lookup in the label index, where :func:`subtree_filter` is two B-tree range reads (an
    account of 30k projects at 100k leaves: 0.5 ms against 4.7 ms per query, and every
    question asks several)."""
    return f"array_contains({SCOPES_COLUMN}, {sql_quote(str(parse_node_id(scope_id)))})"


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
        path: Path | str,
        model_id: str | None,
        dim: int | None,
        read_consistency: timedelta | None = None,
        cache_bytes: int | None = None,
    ):
        """``model_id=None`` opens tables read/delete-only, without the model check.

        ``cache_bytes``: the most LanceDB keeps of index pages, and the most of table
        metadata, in memory (None: its defaults, 6 GB and 1 GB; a build bounds them, see
        :data:`BUILD_CACHE_BYTES`).

        ``read_consistency``: how often a long-lived reader looks for newer table versions
        (None: the version current when a table was opened).

        ``path``: a folder, or the URI of a database on object storage (``s3://...``, the
        distributed deployment; endpoint and credentials from the ``AWS_*`` variables).
        """
        self.remote = isinstance(path, str) and "://" in path
        self.path = path if self.remote else Path(path)
        self.read_consistency = read_consistency
        self.model_id = model_id
        self.dim = dim
        self.cache_bytes = cache_bytes
        self._db = None
        self._tables: dict[str, object] = {}
        self._indexed: set[tuple[str, str]] = set()
        self._versions: dict[str, tuple[int, float]] = {}
        #: Tables this store deleted rows from (their files still hold them until rewritten).
        self._deleted: set[str] = set()

    @property
    def db(self):
        if self._db is None:
            options = {}
            if self.remote:
                from hltm_resources.stores.lake import ObjectStore

                options["storage_options"] = ObjectStore.from_env(self.path).lance_options()
            else:
                self.path.mkdir(parents=True, exist_ok=True)
            if self.cache_bytes is not None:
                options["session"] = lancedb.Session(
                    index_cache_size_bytes=self.cache_bytes,
                    metadata_cache_size_bytes=self.cache_bytes,
                )
            self._db = lancedb.connect(
                str(self.path), read_consistency_interval=self.read_consistency, **options
            )
        return self._db

    def version(self, name: str) -> int:
        """A table's current version; asked of LanceDB at most once per ``VERSION_TTL_S`` (a
        reader built with ``read_consistency`` is that stale anyway)."""
        now = time.monotonic()
        seen = self._versions.get(name)
        if seen is None or now - seen[1] > VERSION_TTL_S:
            seen = (self.table(name).version, now)
            self._versions[name] = seen
        return seen[0]

    def forget_versions(self) -> None:
        """Ask LanceDB for each table's version again at the next :meth:`version` (a writer
        of this process just committed)."""
        self._versions.clear()

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
                    "vectors of different models never mix: build with the table's model "
                    f"({setting_for_model(model)}), or start a new home (or run "
                    "`hltm index --full --reset-vectors`)"
                )
        self._tables[name] = tbl
        return tbl

    def create_tables(self) -> None:
        """Every table, and its full-text indexes, made now if missing: what writers that run
        at once (the distributed deployment's workers) then only open."""
        for name in TABLES:
            self._ensure_text_index(name, self.table(name, create=True))

    def replace_nodes(self, node_ids: Sequence[str], rows: dict[str, pa.Table]) -> None:
        """Delete every row of ``node_ids`` and add ``rows`` (per table)."""
        for name in TABLES:
            fresh = not self.exists(name)
            tbl = self.table(name, create=True)
            if not fresh:
                self._delete(tbl, node_ids)
            data = rows.get(name)
            if data is not None and data.num_rows:
                tbl.add(data.select(tbl.schema.names).cast(tbl.schema))  # an older table
                self._ensure_text_index(name, tbl)

    def _ensure_text_index(self, name: str, tbl) -> None:
        """LanceDB's full-text index on the table's text columns, made once (rows added later
        are searched too, and merged into the index by ``optimize``)."""
        wanted = FTS_COLUMNS.get(name, ())
        if not wanted or (name, "fts") in self._indexed:
            return
        have = {tuple(i.columns) for i in tbl.list_indices() if i.index_type == "FTS"}
        for column in wanted:
            if (column,) not in have:
                tbl.create_index(column, config=FTS())
        self._indexed.add((name, "fts"))

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        for name in TABLES:
            if self.exists(name):
                self._delete(self.table(name), node_ids)
                self._deleted.add(name)

    @staticmethod
    def _delete(tbl, node_ids: Sequence[str]) -> None:
        ids = list(node_ids)
        for start in range(0, len(ids), _DELETE_CHUNK):
            tbl.delete(node_filter(ids[start : start + _DELETE_CHUNK]))

    def scan(
        self, name: str, columns: Sequence[str], where: str | None = None, row_ids: bool = False
    ) -> pa.Table:
        """Rows of a table (no vector search), optionally filtered inside the query;
        ``row_ids``: with each row's ``_rowid`` (for :meth:`take`)."""
        query = self.db.open_table(name).search().select(list(columns))
        if where:
            query = query.where(where)
        if row_ids:
            query = query.with_row_id(True)
        return query.limit(None).to_arrow()  # a plain search without a limit: every row

    def take(self, name: str, row_ids: Sequence[int], columns: Sequence[str]) -> pa.Table:
        """The rows of ``row_ids`` from a :meth:`scan` (in no set order), read from the
        table's newest version as a scan is. Row ids hold for one version only: a row deleted
        since is not returned, and a caller checks what it gets."""
        ids = sorted(int(i) for i in row_ids)  # in storage order: read faster
        return self.db.open_table(name).take_row_ids(ids).select(list(columns)).to_arrow()

    def node_ids(self, name: str) -> set[str]:
        if not self.exists(name):
            return set()
        # Distinct in Arrow first: a table holds some ten rows per node.
        return set(pc.unique(self.scan(name, ["node_id"]).column("node_id")).to_pylist())

    def counts_by_node(self, name: str, where: str | None = None) -> dict[str, int]:
        if not self.exists(name):
            return {}
        counts: dict[str, int] = {}
        for n in self.scan(name, ["node_id"], where).column("node_id").to_pylist():
            counts[n] = counts.get(n, 0) + 1
        return counts

    def search(
        self,
        name: str,
        vector: np.ndarray,
        where: str,
        limit: int,
        columns: Sequence[str],
        refine: int | None = ANN_REFINE,
    ) -> pa.Table:
        """Cosine search restricted by ``where`` inside the query (prefilter); through a
        vector index, ``refine`` times ``limit`` candidates re-ranked on their full vectors
        (:data:`ANN_REFINE`; None: ranked by their PQ codes alone)."""
        tbl = self.table(name)
        return (
            _approximate(tbl.search(vector.astype(np.float32), vector_column_name="vector"), refine)
            .distance_type("cosine")
            .where(where, prefilter=True)
            .select([*columns, "_distance"])
            .limit(limit)
            .to_arrow()
        )

    def search_many(
        self,
        name: str,
        vectors: np.ndarray,
        where: str,
        limit: int,
        columns: Sequence[str],
        refine: int | None = ANN_REFINE,
    ) -> list[pa.Table]:
        """:meth:`search` for each of ``vectors`` (rows), in one pass over the table: a
        brute-force search costs a read of the whole table, whatever the filter keeps."""
        if len(vectors) == 1:
            return [self.search(name, vectors[0], where, limit, columns, refine)]
        query = self.table(name).search(
            np.asarray(vectors, dtype=np.float32), vector_column_name="vector"
        )
        hits = (
            _approximate(query, refine)
            .distance_type("cosine")
            .where(where, prefilter=True)
            .select([*columns, "_distance"])
            .limit(limit)
            .to_arrow()
        )
        query = hits.column("query_index").to_numpy()
        hits = hits.drop_columns(["query_index"])
        return [hits.filter(query == i) for i in range(len(vectors))]

    def text_search(
        self, name: str, query: str, where: str, limit: int, columns: Sequence[str]
    ) -> pa.Table:
        """BM25 over the table's full-text columns (the context at half weight), restricted by
        ``where`` inside the query (prefilter); no rows for a query without searchable words."""
        tbl = self.table(name)
        words = " ".join(_WORDS.findall(query))
        if not words.strip():
            return tbl.search().select(list(columns)).limit(0).to_arrow()
        text, context = FTS_COLUMNS[name]
        match = MultiMatchQuery(words, [text, context], boosts=[1.0, CONTEXT_BOOST])
        return (
            tbl.search(match, query_type="fts")
            .where(where, prefilter=True)
            .select([*columns, "_score"])
            .limit(limit)
            .to_arrow()
        )

    def drop_all(self) -> None:
        """Drop every table (switching embedding models: everything is rebuilt)."""
        for name in TABLES:
            if self.exists(name):
                self.db.drop_table(name)
        self._tables.clear()
        self._indexed.clear()

    def purge_history(self) -> None:
        """Make deleted rows leave no copy: every table this store deleted from is rewritten
        from its current rows, and every older version's files are removed.

        A delete only marks rows in a deletion file, and compaction rewrites a data file only
        when enough of it is deleted (LanceDB's default: 10 %), so a rewrite is the one way to
        be sure. A reader holding an older version fails its query (and retries on the
        latest): erasure wins over it."""
        for name in TABLES:
            if not self.exists(name):
                continue
            tbl = self.table(name)
            if name in self._deleted:
                tbl = self.db.create_table(
                    name, data=tbl.to_arrow(), schema=tbl.schema, mode="overwrite"
                )
                self._tables[name] = tbl
                self._indexed.discard((name, "fts"))
                self._ensure_text_index(name, tbl)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                tbl.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        self._deleted.clear()

    def tidy(
        self,
        keep_versions_for: timedelta = timedelta(hours=1),
        index_from: int | None = None,
        keys_from: int = KEY_INDEX_MIN_ROWS,
        when_needed: bool = False,
        exact_facets: tuple[int, int] = (EXACT_FACET_ROWS, EXACT_FACET_TEXTS),
        tables: Sequence[str] = TABLES,
    ) -> list[str]:
        """Compact small fragments, fold new rows into the indexes, drop versions older than
        ``keep_versions_for``; with ``when_needed``, only in the tables that need it
        (:data:`TIDY_UNINDEXED_SHARE`, :data:`TIDY_SMALL_FRAGMENTS`). A table of ``keys_from``
        rows or more gets B-tree indexes on :data:`KEY_COLUMNS`, one of ``index_from`` rows or
        more (default :data:`VECTOR_INDEX_MIN_ROWS`) a vector index; the facets table only
        past ``exact_facets`` rows or distinct texts (see :data:`EXACT_FACET_ROWS`). Returns
        the tables compacted. ``tables``: these only."""
        if index_from is None:
            index_from = number("HLTM_VECTOR_INDEX_MIN_ROWS", VECTOR_INDEX_MIN_ROWS)
        tidied = []
        for name in tables:
            if self.exists(name):
                tbl = self.table(name)
                if not when_needed or self._untidy(tbl):
                    tbl.optimize(cleanup_older_than=keep_versions_for)
                    tidied.append(name)
                exact = name == "facets" and not self._past_exact_search(
                    tbl, index_from, exact_facets
                )
                self._ensure_indexes(tbl, None if exact else index_from, keys_from)
        return tidied

    @staticmethod
    def _past_exact_search(tbl, index_from: int, most: tuple[int, int]) -> bool:
        """Whether a facets table of ``index_from`` rows or more holds more rows or more
        distinct texts than ``most`` says: whether a scope of it can be too large for the exact
        search (its texts are read a batch at a time)."""
        most_rows, most_texts = most
        if any(i.columns == ["vector"] for i in tbl.list_indices()):
            return True  # one made before (by an older version too) is kept and folded into
        rows = tbl.count_rows()
        if rows < index_from:
            return False
        if rows > most_rows:
            return True
        texts: set[str] = set()
        for batch in tbl.search().select(["text"]).limit(None).to_batches():
            texts.update(batch.column("text").to_pylist())
            if len(texts) > most_texts:
                return True
        return False

    @staticmethod
    def _untidy(tbl) -> bool:
        """Whether ``tbl`` has many small fragments or rows outside its indexes."""
        stats = tbl.stats()
        if stats["fragment_stats"]["num_small_fragments"] >= TIDY_SMALL_FRAGMENTS:
            return True
        limit = TIDY_UNINDEXED_SHARE * stats["num_rows"]
        return any(
            tbl.index_stats(index.name).num_unindexed_rows > limit for index in tbl.list_indices()
        )

    @staticmethod
    def _ensure_indexes(tbl, index_from: int | None, keys_from: int) -> None:
        """The B-trees on :data:`KEY_COLUMNS` and the vector index a table of its size lacks
        (``index_from`` None: no vector index)."""
        have = {tuple(i.columns) for i in tbl.list_indices()}
        keys = [c for c in KEY_COLUMNS if c in tbl.schema.names and (c,) not in have]
        labels = SCOPES_COLUMN in tbl.schema.names and (SCOPES_COLUMN,) not in have
        if not keys and not labels and (("vector",) in have or index_from is None):
            return
        rows = tbl.count_rows()
        if rows >= keys_from:
            for column in keys:
                tbl.create_index(column, config=BTree())
            if labels:
                tbl.create_index(SCOPES_COLUMN, config=LabelList())
        if index_from is not None and rows >= index_from and ("vector",) not in have:
            tbl.create_index("vector", config=IvfPq(distance_type="cosine"))

    def has_scope_labels(self) -> bool:
        """Whether every table carries :data:`SCOPES_COLUMN` (tables written since it)."""
        names = [name for name in TABLES if self.exists(name)]
        return bool(names) and all(SCOPES_COLUMN in self.table(name).schema.names for name in names)

    def vector_indexed(self, name: str) -> bool:
        """Whether a table has an approximate index on its vectors (see :meth:`tidy`)."""
        return self.exists(name) and any(
            i.columns == ["vector"] for i in self.table(name).list_indices()
        )
