"""The streamed generator behind ``hltm bench scale``: exact size, a few very large accounts,
a valid snapshot."""

from collections import Counter

from hltm_resources.stores.sot import read_snapshot
from query.evaluation.data.sample_world import LARGE_ACCOUNT_SHARES, stream_snapshot


def test_a_streamed_snapshot_has_exactly_the_leaves_asked_for_with_large_accounts(tmp_path):
    counts = stream_snapshot(tmp_path, 2_000, seed=5)
    snap = read_snapshot(tmp_path)  # raises on any invalid row or dangling parent
    assert counts["projects"] == snap.count("projects.jsonl") == 2_000
    seat_account = {s["seat_id"]: s["account_id"] for s in snap.rows("seats.jsonl")}
    per_account = Counter(seat_account[p["seat_id"]] for p in snap.rows("projects.jsonl"))
    sizes = list(per_account.values())
    assert sizes[: len(LARGE_ACCOUNT_SHARES)] == [int(2_000 * s) for s in LARGE_ACCOUNT_SHARES]
    assert len(sizes) > len(LARGE_ACCOUNT_SHARES)  # then accounts of 100-800 projects
    assert counts["documents"] == snap.count("documents.jsonl") > 2 * 2_000


def test_the_same_seed_streams_the_same_snapshot(tmp_path):
    stream_snapshot(tmp_path / "a", 300, seed=9)
    stream_snapshot(tmp_path / "b", 300, seed=9)
    for name in ("accounts", "seats", "projects", "documents"):
        a = (tmp_path / "a" / f"{name}.jsonl").read_bytes()
        assert a == (tmp_path / "b" / f"{name}.jsonl").read_bytes()
