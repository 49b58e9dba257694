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

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import duckdb

from hltm_resources.config import DeploymentError

#: DuckDB's extensions come from PyPI packages (``duckdb-extension-<name>``); the name DuckDB
#: loads each under (the postgres extension's entry point is ``postgres_scanner``).
EXTENSIONS = {"httpfs": "httpfs", "postgres": "postgres_scanner", "ducklake": "ducklake"}
#: The catalog's tables live in this PostgreSQL schema (Dagster's, if it shares the database,
#: stay in ``public``).
METADATA_SCHEMA = "hltm_lake"
#: The lake's name inside each DuckDB connection (made the default catalog with ``USE``).
CATALOG = "hltm"


class LakeError(DeploymentError):
    """The shared storage is missing, unreachable or misconfigured."""


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
        """Attach the lake to ``con`` and make it the default catalog."""
        load_extensions(con)
        con.execute(self.store.duckdb_secret())
        conninfo = self.catalog_url.replace("'", "''")
        try:
            con.execute(
                f"ATTACH 'ducklake:postgres:{conninfo}' AS {CATALOG} "
                f"(DATA_PATH '{self.data_path}', METADATA_SCHEMA '{METADATA_SCHEMA}', "
                "DATA_INLINING_ROW_LIMIT 0)"
            )
        except duckdb.Error as exc:
            raise LakeError(
                f"cannot attach the memory lake (catalog HLTM_CATALOG_URL, data {self.data_path}):"
                f" {exc}; is PostgreSQL up and the bucket there?"
            ) from exc
        con.execute(f"USE {CATALOG}")

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

    def compact(self, con: duckdb.DuckDBPyConnection) -> None:
        """Rewrite data files that carry deleted rows, then drop every older snapshot and the
        files only they used: afterwards no file on the store holds a deleted row."""
        con.execute(f"CALL ducklake_rewrite_data_files('{CATALOG}', delete_threshold => 0)")
        con.execute(f"CALL ducklake_merge_adjacent_files('{CATALOG}')")
        con.execute(f"CALL ducklake_expire_snapshots('{CATALOG}', older_than => now())")
        con.execute(f"CALL ducklake_cleanup_old_files('{CATALOG}', cleanup_all => true)")
