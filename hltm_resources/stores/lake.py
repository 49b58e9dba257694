"""Storage that many workers share (the distributed deployment).

The memory tables and views live in a DuckLake: its catalog in PostgreSQL, its data as Parquet
files on S3-compatible object storage. Every process attaches the same lake, and DuckLake's
snapshots make concurrent writers safe (each transaction commits a snapshot in the catalog; a
conflicting commit is retried by DuckLake or fails as a whole). The vectors are LanceDB tables
under the same bucket, whose commits are conditional writes on the object store.

Nothing here is a locking protocol of our own: the catalog database and the object store are
the only arbiters. The S3 endpoint and credentials come from the standard ``AWS_*`` variables
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``), so
the same environment serves DuckDB, LanceDB and boto3.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import duckdb

#: DuckDB's extensions come from PyPI packages (``duckdb-extension-<name>``); the name DuckDB
#: loads each under (the postgres extension's entry point is ``postgres_scanner``).
EXTENSIONS = {"httpfs": "httpfs", "postgres": "postgres_scanner", "ducklake": "ducklake"}
#: The catalog's tables live in this PostgreSQL schema (Dagster's, if it shares the database,
#: stay in ``public``).
METADATA_SCHEMA = "hltm_lake"
#: The lake's name inside each DuckDB connection (made the default catalog with ``USE``).
CATALOG = "hltm"
#: The PostgreSQL advisory lock of :meth:`Lake.one_at_a_time`: unique to HLTM, and not the
#: writer lock's (``stores/lock.py: ADVISORY_KEY``, which a writing command holds meanwhile).
SCHEMA_LOCK = 0x484C5453  # "HLTS"
#: The catalogs whose :meth:`Lake.one_at_a_time` this thread holds (it nests: an attach
#: inside ``init_schema`` must not wait for its own thread's lock).
_HELD = threading.local()


def _lost_a_race(exc: duckdb.Error) -> bool:
    """Whether an attach failed because another process was making the same catalog."""
    text = str(exc)
    return "duplicate key value" in text or "already exists" in text


class DeploymentError(RuntimeError):
    """A service of the distributed deployment is missing, unreachable or not set up."""


class LakeError(DeploymentError):
    """The shared storage is missing, unreachable or misconfigured."""


def without_password(url: str | None) -> str:
    """``url`` as it may be shown: any password replaced by ``***``."""
    if not url:
        return "(not set)"
    parsed = urlparse(url)
    if parsed.password:
        netloc = parsed.netloc.replace(f":{parsed.password}@", ":***@")
        return parsed._replace(netloc=netloc).geturl()
    return url


def _scrubbed(text: str, urls: list[str | None]) -> str:
    """``text`` with the password of any of ``urls`` replaced by ``***``."""
    for url in urls:
        password = urlparse(url).password if url else None
        if password:
            text = text.replace(password, "***")
    return text


def service_down(exc: BaseException, environ: Mapping[str, str] | None = None):
    """The one-line :class:`DeploymentError` for a failure that comes from a service of the
    distributed deployment being down or emptied (``exc`` or any exception it was raised
    from), naming the service, where it is and what to do; None for any other failure."""
    env = os.environ if environ is None else environ
    if env.get("HLTM_DEPLOYMENT") != "distributed":
        return None  # a home has no services: its failures are its own
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        kind = f"{type(exc).__module__}.{type(exc).__name__}"
        secrets = [env.get("HLTM_BROKER_URL"), env.get("HLTM_CATALOG_URL")]
        text = _scrubbed(" ".join(str(exc).split())[:200], secrets)
        if kind.startswith(("redis.", "kombu.")) and "Error" in kind:
            where = without_password(env.get("HLTM_BROKER_URL"))
            return DeploymentError(
                f"the broker (Redis at {where}, HLTM_BROKER_URL) failed: {text}; start it, "
                "then run this command again (what was built is kept)"
            )
        if kind.startswith(("psycopg2.", "sqlalchemy.exc.", "dagster_postgres.")) and (
            "Operational" in kind or "too many retries" in text or "connect" in text
        ):
            where = without_password(env.get("HLTM_CATALOG_URL"))
            return DeploymentError(
                f"PostgreSQL (at {where}, HLTM_CATALOG_URL) failed: {text}; start it, then run "
                "this command again (what was built is kept)"
            )
        endpoint = (env.get("AWS_ENDPOINT_URL") or "").rstrip("/")
        s3 = (
            kind.startswith(("botocore.", "boto3."))
            or "s3" in text.lower()
            or bool(endpoint and endpoint in text)
            or any(f"HTTP {verb} " in text for verb in ("GET", "HEAD", "PUT", "POST", "DELETE"))
        )
        if s3 and ("404" in text or "NoSuchKey" in text):
            return DeploymentError(
                f"the object store ({env.get('HLTM_OBJECT_STORE', '(not set)')} at "
                f"{endpoint or 'AWS'}) no longer holds files the memory's catalog names "
                f"({text}): it was emptied or replaced, so the memory cannot be read. Rebuild "
                "it from your snapshot: hltm load --rebuild SNAPSHOT (drops the lake, then "
                "loads), then hltm index --full"
            )
        if s3 or (kind.startswith("lance") and "IO" in text):
            return DeploymentError(
                f"the object store ({env.get('HLTM_OBJECT_STORE', '(not set)')} at "
                f"{endpoint or 'AWS'}) failed: {text}; start it, then run this command again "
                "(what was built is kept)"
            )
        exc = exc.__cause__ or exc.__context__
    return None


@dataclass(frozen=True)
class ObjectStore:
    """An S3-compatible bucket and prefix, with the endpoint and credentials to reach it."""

    url: str
    endpoint: str | None = None
    key_id: str | None = None
    secret: str | None = field(default=None, repr=False)
    region: str = "us-east-1"

    @classmethod
    def from_env(cls, url: str) -> ObjectStore:
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise LakeError(f"object store {url!r}: use s3://BUCKET[/PREFIX] (HLTM_OBJECT_STORE)")
        env = os.environ
        return cls(
            url=url.rstrip("/"),
            endpoint=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
            key_id=env.get("AWS_ACCESS_KEY_ID") or None,
            secret=env.get("AWS_SECRET_ACCESS_KEY") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
        )

    @property
    def bucket(self) -> str:
        return urlparse(self.url).netloc

    @property
    def prefix(self) -> str:
        return urlparse(self.url).path.strip("/")

    def child(self, name: str) -> str:
        return f"{self.url}/{name}"

    def lance_options(self) -> dict[str, str]:
        """LanceDB's ``storage_options``."""
        opts = {"aws_region": self.region}
        if self.endpoint:
            opts["aws_endpoint"] = self.endpoint
            opts["allow_http"] = str(self.endpoint.startswith("http://")).lower()
        if self.key_id:
            opts |= {"aws_access_key_id": self.key_id, "aws_secret_access_key": self.secret or ""}
        return opts

    def duckdb_secret(self) -> str:
        """A ``CREATE SECRET`` for DuckDB's httpfs, scoped to this bucket."""
        parts = ["TYPE s3", f"REGION '{self.region}'", f"SCOPE 's3://{self.bucket}'"]
        if self.key_id:
            parts += [f"KEY_ID '{self.key_id}'", f"SECRET '{self.secret or ''}'"]
        if self.endpoint:
            parsed = urlparse(self.endpoint)
            parts += [
                f"ENDPOINT '{parsed.netloc or parsed.path}'",
                "URL_STYLE 'path'",
                f"USE_SSL {str(parsed.scheme != 'http').lower()}",
            ]
        return f"CREATE OR REPLACE SECRET hltm_s3 ({', '.join(parts)})"

    def client(self):
        """A boto3 S3 client (listing and checks; the stores write through their engines)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
            region_name=self.region,
        )

    def keys(self, under: str = "") -> list[str]:
        """Every object key below the prefix (and ``under`` inside it)."""
        prefix = "/".join(p for p in (self.prefix, under.strip("/")) if p)
        pages = self.client().get_paginator("list_objects_v2")
        out = []
        for page in pages.paginate(Bucket=self.bucket, Prefix=prefix + "/" if prefix else ""):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out


def _extension_files() -> dict[str, Path]:
    version = duckdb.__version__
    found = {}
    for package, loads_as in EXTENSIONS.items():
        try:
            module = __import__(f"duckdb_extension_{package}")
        except ImportError:
            raise LakeError(
                "the distributed deployment needs DuckDB's extensions from PyPI: "
                "pip install 'hltm[distributed]'"
            ) from None
        path = Path(module.__file__).parent / "extensions" / f"v{version}"
        path = path / f"{package}.duckdb_extension"
        if not path.exists():
            raise LakeError(
                f"duckdb-extension-{package} does not match DuckDB {version} ({path} is "
                "missing): install the extension release of the same version"
            )
        found[loads_as] = path
    return found


def load_extensions(con: duckdb.DuckDBPyConnection) -> None:
    """Load httpfs, postgres and ducklake from their PyPI packages (never from the network).

    DuckDB derives an extension's entry point from its file name, so each file is loaded from
    a copy named as DuckDB expects."""
    cache = Path(tempfile.gettempdir()) / f"hltm-duckdb-extensions-{duckdb.__version__}"
    cache.mkdir(parents=True, exist_ok=True)
    for loads_as, source in _extension_files().items():
        target = cache / f"{loads_as}.duckdb_extension"
        if not target.exists():
            partial = target.with_name(f"{target.name}.{os.getpid()}")
            shutil.copyfile(source, partial)
            os.replace(partial, target)
        con.load_extension(str(target))


@dataclass(frozen=True)
class Lake:
    """A DuckLake: catalog in PostgreSQL (``catalog_url``), Parquet data on ``store``."""

    catalog_url: str = field(repr=False)
    store: ObjectStore

    @property
    def data_path(self) -> str:
        return self.store.child("ducklake") + "/"

    @property
    def name(self) -> str:
        return f"ducklake on {self.store.url}"

    def __str__(self) -> str:
        return self.name

    def attach(self, con: duckdb.DuckDBPyConnection) -> None:
        """Attach the lake to ``con`` and make it the default catalog. The first attach makes
        the catalog; processes that race to make it are made to take turns."""
        load_extensions(con)
        con.execute(self.store.duckdb_secret())
        conninfo = self.catalog_url.replace("'", "''")
        attach = (
            f"ATTACH 'ducklake:postgres:{conninfo}' AS {CATALOG} "
            f"(DATA_PATH '{self.data_path}', METADATA_SCHEMA '{METADATA_SCHEMA}', "
            "DATA_INLINING_ROW_LIMIT 0)"
        )
        try:
            try:
                con.execute(attach)
            except duckdb.Error as exc:
                if not _lost_a_race(exc):
                    raise
                # Another process made the catalog while this one did: it exists now.
                with self.one_at_a_time():
                    con.execute(attach)
        except duckdb.Error as exc:
            text = _scrubbed(" ".join(str(exc).split())[:300], [self.catalog_url])
            raise LakeError(
                f"PostgreSQL (at {without_password(self.catalog_url)}, HLTM_CATALOG_URL) or the "
                f"object store ({self.data_path}) failed as the memory lake was attached: {text}; "
                "start it (is PostgreSQL up and the bucket there?), then run this command again"
            ) from exc
        con.execute(f"USE {CATALOG}")

    @contextlib.contextmanager
    def catalog_session(self) -> Iterator:
        """A cursor on the catalog's PostgreSQL database, in autocommit, closed after the
        block; a PostgreSQL that cannot be reached is a :class:`LakeError` in one line."""
        import psycopg2

        try:
            con = psycopg2.connect(self.catalog_url)
        except psycopg2.Error as exc:
            text = _scrubbed(" ".join(str(exc).split())[:300], [self.catalog_url])
            raise LakeError(
                f"PostgreSQL (at {without_password(self.catalog_url)}, HLTM_CATALOG_URL) "
                f"failed: {text}; start it, then run this command again"
            ) from exc
        try:
            con.autocommit = True
            with con.cursor() as cur:
                yield cur
        finally:
            con.close()

    @contextlib.contextmanager
    def one_at_a_time(self) -> Iterator[None]:
        """The block runs in one process of the deployment at a time (a PostgreSQL advisory
        lock, released when the block ends or the process dies): what makes the catalog and
        HLTM's tables (:func:`~hltm_resources.stores.database.init_schema`) holds it."""
        held = _HELD.__dict__.setdefault("urls", set())
        if self.catalog_url in held:
            yield
            return
        with self.catalog_session() as cur:
            cur.execute("SELECT pg_advisory_lock(%s)", [SCHEMA_LOCK])
            held.add(self.catalog_url)
            try:
                yield
            finally:
                held.discard(self.catalog_url)

    def exists(self) -> bool:
        """Whether the lake holds HLTM's tables (``hltm load`` made it)."""
        con = duckdb.connect(":memory:")
        try:
            self.attach(con)
            row = con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? "
                "AND table_name = 'hltm_meta'",
                [CATALOG],
            ).fetchone()
            return bool(row[0])
        finally:
            con.close()

    def drop(self) -> None:
        """Forget the lake: its catalog (the metadata schema in PostgreSQL) and every object
        under the store's prefix (its data files and the vector tables). What a deployment
        whose object store lost its files starts over from (``hltm load --rebuild``)."""
        with self.catalog_session() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {METADATA_SCHEMA} CASCADE")
        client = self.store.client()
        keys = self.store.keys()
        for start in range(0, len(keys), 1000):
            client.delete_objects(
                Bucket=self.store.bucket,
                Delete={"Objects": [{"Key": k} for k in keys[start : start + 1000]]},
            )

    def vacuum(self) -> None:
        """Rewrite every table of the catalog's PostgreSQL database (``VACUUM FULL``): rows
        deleted from it (the catalog's entries and column statistics of files a compaction
        dropped, erased runs) stay in a table's pages until then."""
        with self.catalog_session() as cur:
            cur.execute("VACUUM FULL")

    def compact(self, con: duckdb.DuckDBPyConnection) -> None:
        """Rewrite data files that carry deleted rows, then drop every older snapshot and the
        files only they used: afterwards no file on the store holds a deleted row."""
        con.execute(f"CALL ducklake_rewrite_data_files('{CATALOG}', delete_threshold => 0)")
        con.execute(f"CALL ducklake_merge_adjacent_files('{CATALOG}')")
        con.execute(f"CALL ducklake_expire_snapshots('{CATALOG}', older_than => now())")
        con.execute(f"CALL ducklake_cleanup_old_files('{CATALOG}', cleanup_all => true)")
