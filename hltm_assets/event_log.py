"""Dagster's SQLite event log, writing a batch of asset events in one transaction, and
starting a run without rebuilding its database from scratch.

A partition-range run records two asset events per partition (planned, materialized). Dagster's
SQLite event log stores each on its own: it opens a new SQLAlchemy engine, connects and commits
for the run's shard and again for the cross-run index, about 12 ms an event here; that was 70 %
of the time ``hltm index`` spent in Dagster (cProfile, 600 leaves). Dagster hands an event log
a whole batch when ``DAGSTER_EVENT_BATCH_SIZE`` is set (it does so for the events of one
partition range) but the SQLite storage then still stores them one by one. This subclass
stores a batch with one connection per shard, in one transaction each: the same rows as
event-by-event, in the same files, so ``dagster dev`` (which uses the stock storage) reads
them as its own.

Three fixed costs per run went the same way: every connection made a new SQLAlchemy engine
(kept here, one per database file, with its pooled connection), every commit of the 15-20
events a run stores one by one (run and step starts and ends) waited for the disk (here the
files are in SQLite's write-ahead-log mode, see :func:`_write_ahead`; 17 ms an event before,
6 ms after, profiled on a loaded machine), and every run's new database was created table by
table and stamped by alembic (about 0.4 s a run; here it is a copy of one such database made
once per process).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dagster import __version__ as dagster_version
from dagster._core.errors import DagsterInvariantViolationError
from dagster._core.events import ASSET_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sqlalchemy_compat import db_result
from dagster._core.storage.sqlite import create_db_conn_string
from sqlalchemy import create_engine
from sqlalchemy import event as sqlalchemy_event

#: Events Dagster hands over in one batch (one partition range's asset events).
EVENT_BATCH_SIZE = 1000
#: Engines kept (the index database's and the newest runs').
KEPT_ENGINES = 8
#: The empty run database copied for each new run (per Dagster version: its schema).
_TEMPLATE = f".hltm-run-template-{dagster_version}.db"


def _write_ahead(dbapi_connection, _record) -> None:
    """Commits without an fsync each: SQLite's write-ahead log, synced at checkpoints.

    A run stores some 20 events outside batches (run and step starts and ends, checks), each
    in its own transaction; in the default rollback-journal mode each commit waited for the
    disk. In WAL mode with ``synchronous=NORMAL`` a crash of the machine can lose the last
    events but never corrupts the file, and readers (``dagster dev``) are never blocked. The
    mode is stored in the file, so Dagster's own storage then opens it the same way."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    """:class:`SqliteEventLogStorage` whose ``store_event_batch`` is one transaction a shard."""

    def __init__(self, *args, **kwargs) -> None:
        self._engines: OrderedDict[str, object] = OrderedDict()
        self._template_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> BatchedSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str):
        engine = self._engines.get(shard)
        if engine is None:
            engine = create_engine(
                self.conn_string_for_shard(shard),
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
            )
            sqlalchemy_event.listen(engine, "connect", _write_ahead)
            if shard not in self._initialized_dbs:
                if not self._created_from_template(shard):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            self._engines[shard] = engine
            while len(self._engines) > KEPT_ENGINES:
                self._engines.popitem(last=False)[1].dispose()
        self._engines.move_to_end(shard)
        return engine

    def _created_from_template(self, shard: str) -> bool:
        """A new run's database as a copy of an empty one made once (True if it was)."""
        if shard == INDEX_SHARD_NAME:
            return False
        target = Path(self.path_for_shard(shard))
        if target.exists():
            return False
        with self._template_lock:
            template = Path(self._base_dir) / _TEMPLATE
            if not template.exists():
                scratch = template.with_suffix(f".{os.getpid()}.tmp")
                engine = create_engine(create_db_conn_string(self._base_dir, scratch.stem))
                try:
                    self._initdb(engine)
                finally:
                    engine.dispose()
                os.replace(Path(self._base_dir) / f"{scratch.stem}.db", template)
            shutil.copyfile(template, target)
        return True

    @contextmanager
    def _connect(self, shard: str) -> Iterator:
        with self._db_lock:
            engine = self._engine(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def dispose(self) -> None:
        while self._engines:
            self._engines.popitem()[1].dispose()
        super().dispose()

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        batched = defaultdict(list)
        for event in events:
            if event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS:
                batched[event.run_id].append(event)
            else:  # asset check events and the like: Dagster's own path, one by one
                self.store_event(event)
        for run_id, run_events in batched.items():
            statements = [self.prepare_insert_event(e) for e in run_events]
            with self.run_connection(run_id) as conn:
                for statement in statements:
                    conn.execute(statement)
            # Mirrored in the cross-run index, as store_event does for each asset event.
            with self.index_transaction() as conn:
                ids = []
                for statement in statements:
                    with db_result(conn, statement) as result:
                        ids.append(result.inserted_primary_key[0])
                if any(i is None for i in ids):
                    raise DagsterInvariantViolationError(
                        "Cannot store asset event tags for null event id."
                    )
                self._store_asset_event_tags(conn, run_events, ids)
                for event, event_id in _last_of_each_stretch(run_events, ids):
                    self._store_asset_event(conn, event, event_id)


def _last_of_each_stretch(
    events: Sequence[EventLogEntry], ids: Sequence[int]
) -> Iterator[tuple[EventLogEntry, int]]:
    """The last event (with its id) of each stretch of events of one type for one asset.

    ``_store_asset_event`` overwrites the asset's row in the asset-key table: each event of a
    type sets the same columns (its run, its timestamp, and for a materialization the whole
    event again), so within one transaction only a stretch's last event decides what the row
    holds. A range run's thousands of events for one asset thereby write that row once, not
    once per partition (re-serializing every event took 21 s of a 61 s cProfile of a 1 %
    churn at 10k leaves)."""
    for i, event in enumerate(events):
        following = events[i + 1] if i + 1 < len(events) else None
        if (
            following is None
            or following.dagster_event_type != event.dagster_event_type
            or following.dagster_event.asset_key != event.dagster_event.asset_key  # type: ignore[union-attr]
        ):
            yield event, ids[i]
