"""The tree schema is data: one declaration drives ids, snapshot files, SOT tables, Dagster
assets and partitions, build order and retrieval; a tree of other levels runs through the same
code."""

from pathlib import Path

import dagster as dg
import pytest

from hltm_assets.definitions import build_definitions
from hltm_assets.runner import run_index
from hltm_resources.config import ConfigError, Settings
from hltm_resources.indexing.checks import check_level
from hltm_resources.indexing.loading import load_snapshot
from hltm_resources.indexing.verify import verify
from hltm_resources.schema import DEFAULT_SCHEMA, SchemaError, TreeSchema
from query import Memory
from tests.conftest import write_jsonl

FOUR = "org>team>seat>project"


def test_the_default_schema_is_the_public_contract():
    assert DEFAULT_SCHEMA.names == ("account", "seat", "project")
    assert DEFAULT_SCHEMA.files == {
        "accounts.jsonl": ("account_id", "name"),
        "seats.jsonl": ("seat_id", "account_id", "name"),
        "projects.jsonl": ("project_id", "seat_id", "name", "updated_at"),
        "documents.jsonl": ("doc_id", "project_id", "kind", "text", "updated_at"),
    }
    assert DEFAULT_SCHEMA.bottom_up == ("project", "seat", "account")
    assert DEFAULT_SCHEMA.leaf_count_key == "project_count"
    assert [lv.noun for lv in DEFAULT_SCHEMA.levels] == ["organization", "recruiter", "project"]
    assert TreeSchema.parse("account>seat>project") is DEFAULT_SCHEMA


def test_a_schema_derives_every_name_from_its_levels():
    four = TreeSchema.parse(FOUR)
    assert four.fields("team") == ("team_id", "org_id", "name")
    assert four.level("seat").table == "sot_seats" and four.level("team").asset == "team_memory"
    assert four.parent("seat").name == "team" and four.child("team").name == "seat"
    assert four.parents_bottom_up == ("seat", "team", "org")
    assert [four.rank(n) for n in four.names] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "spec,message",
    [
        ("project", "at least two levels"),
        ("a>a", "distinct"),
        ("Org>team", "not usable"),
        ("org>document", "not usable"),
        ("org>team-x", "not usable"),
    ],
)
def test_a_bad_schema_says_what_is_wrong(spec, message):
    with pytest.raises(SchemaError, match=message):
        TreeSchema.parse(spec)


def test_settings_refuse_a_bad_tree_naming_the_variable(tmp_path):
    with pytest.raises(ConfigError, match="HLTM_TREE"):
        Settings(home=tmp_path, tree="project")


def four_level_snapshot(world, directory: Path) -> tuple[Path, dict[str, str]]:
    """The small world with teams between accounts and seats (two seats per team)."""
    directory.mkdir(parents=True, exist_ok=True)
    team_of: dict[str, str] = {}
    teams = []
    for account in world.accounts:
        seats = [s for s in world.seats if s["account_id"] == account["account_id"]]
        for i, seat in enumerate(seats):
            team = f"{account['account_id']}-t{i // 2 + 1}"
            team_of[seat["seat_id"]] = team
            if i % 2 == 0:
                teams.append({"team_id": team, "org_id": account["account_id"], "name": team})
    write_jsonl(
        directory / "orgs.jsonl",
        [{"org_id": a["account_id"], "name": a["name"]} for a in world.accounts],
    )
    write_jsonl(directory / "teams.jsonl", teams)
    write_jsonl(
        directory / "seats.jsonl",
        [
            {"seat_id": s["seat_id"], "team_id": team_of[s["seat_id"]], "name": s["name"]}
            for s in world.seats
        ],
    )
    write_jsonl(directory / "projects.jsonl", world.projects)
    write_jsonl(directory / "documents.jsonl", world.documents)
    return directory, team_of


def test_a_four_level_tree_builds_and_answers_through_the_same_assets(tmp_path, world):
    snapshot, team_of = four_level_snapshot(world, tmp_path / "snapshot")
    settings = Settings(home=tmp_path / "home", tree=FOUR)
    load_snapshot(settings, snapshot)

    defs = build_definitions(settings)
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert {"org_memory", "team_memory", "seat_memory", "project_memory"} <= keys
    mapping = defs.get_assets_def("team_memory").get_partition_mapping(dg.AssetKey("seat_memory"))
    assert dict(mapping.downstream_partition_keys_by_upstream_partition_key) == team_of
    mapping = defs.get_assets_def("seat_memory").get_partition_mapping(
        dg.AssetKey("project_memory")
    )
    assert dict(mapping.downstream_partition_keys_by_upstream_partition_key) == {
        p["project_id"]: p["seat_id"] for p in world.projects
    }

    result = run_index(settings)
    assert not result.failed and result.runs == 4  # one partition-range run per level
    assert result.built == {
        "project": len(world.projects),
        "seat": len(world.seats),
        "team": len(set(team_of.values())),
        "org": len(world.accounts),
    }
    assert list(result.as_json())[:4] == [
        "leaves_built",
        "seats_built",
        "teams_built",
        "orgs_built",
    ]
    for level in ("project", "seat", "team", "org"):
        assert check_level(settings, level).passed
    assert verify(settings).ok

    team = sorted(set(team_of.values()))[0]
    projects = [t for t in world.truth.values() if team_of[t.seat_id] == team]
    skill = sorted({s for t in projects for s in t.skills})[0]
    gold = sorted(f"project:{t.project_id}" for t in projects if skill in t.skills)
    under_team = {f"project:{t.project_id}" for t in projects}
    under_team |= {f"seat:{s}" for s, t in team_of.items() if t == team} | {f"team:{team}"}
    with Memory(settings, log_queries=False) as mem:
        which = mem.ask(f"Which openings required {skill}?", scope=f"team:{team}")
        assert sorted(which.references) == gold
        where = mem.ask("Where are the jobs usually located?", scope=f"team:{team}")
        assert where.references == [f"team:{team}"]
        assert f"of {len(projects)})" in where.answer
        for r in (which, where):
            assert set(r.references) <= under_team
        with pytest.raises(ValueError, match="org, team, seat, project"):
            mem.ask("Where?", scope="account:x")


def test_a_home_keeps_the_tree_it_was_made_with(tmp_path, snapshot_dir):
    settings = Settings(home=tmp_path / "home")
    load_snapshot(settings, snapshot_dir)
    with pytest.raises(ConfigError, match="HLTM_TREE='account>seat>project'"):
        load_snapshot(Settings(home=tmp_path / "home", tree=FOUR), snapshot_dir)
