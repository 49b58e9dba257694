"""The generated recruiting world: plain worlds unchanged, adversarial worlds honest and split."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from itertools import chain
from pathlib import Path

import pytest

from hltm_resources.engines.vocabulary import KEY_ALIASES
from hltm_resources.text import fold, snake_key
from query.evaluation.data import phrasing as ph
from query.evaluation.data.sample_world import (
    LOCATIONS,
    World,
    evolve,
    generate_world,
    make_queries,
    write_snapshot,
)

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"seed": 3, "accounts": 2, "seats_per_account": 2, "projects_per_seat": (3, 4)}
MEDIUM = {"seed": 5, "accounts": 4, "seats_per_account": 3, "projects_per_seat": (6, 9)}

#: Recorded from the generator before adversarial worlds existed (seed 3, default sizes).
PLAIN_SEED3_FIRST_REQUISITION = (
    '{"req_id": "R-p00001", "job_title": "Product Manager", "seniority_level": "Staff", '
    '"office_location": "Madrid, Spain", "workplace": "remote", "required_skills": '
    '["Analytics", "Jira", "Stakeholder Management"], "employment_type": "Full-time", '
    '"hiring_manager": "Bruno Kowalski"}'
)
PLAIN_SEED3_SHA256 = {
    "accounts": "b59d75fad3a7ca155e57ef3c4218035682495bd0cabddceb8aef8f8b4bc30a0e",
    "seats": "b58ae1d536ebc8358a94a93f0d6a877dd53f08e1bbdf9ed15522279859b419a7",
    "projects": "c4bb402e7e19dadf95c92cb5cfcd7bd953a9224b14caf56bfe79cea06705225c",
    "documents": "9e738b116a8e5d45d46393dc41b8cb65f71f96f36db00ad77ddf1b19299b139e",
    "queries": "baaba743826d7438d043c93b8328f96b76800b00817950bd8a04ac108644f610",
}
PLAIN_SMALL_SHA256 = {
    "documents": "bfd0ed4cb21f4aec71dbebf07c8dc6814732406378b0e0765416d172f6d3f8f7",
    "queries": "da51a884255094b9e16dd0829b60dcb606f28cc0b3d18739ffc46d223d75a36e",
}


def jsonl_sha(rows: list[dict]) -> str:
    """The sha256 of ``rows`` as write_snapshot / write_queries write them."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def adversarial(split: str, **sizes) -> World:
    return generate_world(**(sizes or MEDIUM), split=split, variety="adversarial")


def by_project(world: World) -> dict[str, list[dict]]:
    docs: dict[str, list[dict]] = {}
    for d in world.documents:
        docs.setdefault(d["project_id"], []).append(d)
    return docs


def current_export(docs: list[dict]) -> dict:
    """The newest requisition of a project."""
    return max((d for d in docs if d["kind"] == "requisition"), key=lambda d: d["updated_at"])


def _osa(a: str, b: str) -> int:
    """Edit distance with adjacent transpositions."""
    d = [[i + j if not i * j else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def appears(value: str, text: str) -> bool:
    """``value`` is stated in ``text``, maybe with one typo (case and punctuation aside)."""
    want, words = fold(value), fold(text).split()
    if f" {want} " in f" {' '.join(words)} ":
        return True
    n = len(want.split())
    return any(
        abs(len(" ".join(words[i : i + n])) - len(want)) <= 1
        and _osa(" ".join(words[i : i + n]), want) <= 1
        for i in range(len(words) - n + 1)
    )


# -- plain worlds ----------------------------------------------------------------------------


def test_plain_is_the_library_default_and_unchanged():
    world = generate_world(seed=3)
    assert (world.variety, len(world.projects), len(world.documents)) == ("plain", 128, 587)
    assert world.counts() == {"accounts": 3, "seats": 12, "projects": 128, "documents": 587}
    assert world.documents[0]["text"] == PLAIN_SEED3_FIRST_REQUISITION
    for name in ("accounts", "seats", "projects", "documents"):
        assert jsonl_sha(getattr(world, name)) == PLAIN_SEED3_SHA256[name], name
    assert jsonl_sha(make_queries(world, seed=3)) == PLAIN_SEED3_SHA256["queries"]
    # ``split`` means nothing to a plain world.
    heldout = generate_world(seed=3, split="heldout", variety="plain")
    assert heldout.documents == world.documents


def test_plain_small_world_unchanged(tmp_path):
    world = generate_world(**SMALL)
    assert (len(world.projects), len(world.documents)) == (14, 64)
    out = write_snapshot(world, tmp_path)
    sha = hashlib.sha256((out / "documents.jsonl").read_bytes()).hexdigest()
    assert sha == PLAIN_SMALL_SHA256["documents"]
    assert jsonl_sha(make_queries(world, seed=3)) == PLAIN_SMALL_SHA256["queries"]
    assert not world.annotations


def test_unknown_split_or_variety_is_refused():
    with pytest.raises(ValueError, match="split"):
        generate_world(seed=1, split="test")
    with pytest.raises(ValueError, match="variety"):
        generate_world(seed=1, variety="hard")


# -- adversarial worlds ----------------------------------------------------------------------


@pytest.fixture(scope="module", params=ph.SPLITS)
def adv(request) -> World:
    return adversarial(request.param)


def test_adversarial_is_deterministic_per_seed():
    for split in ph.SPLITS:
        a, b = adversarial(split), adversarial(split)
        assert a.documents == b.documents and a.annotations == b.annotations
        assert make_queries(a, seed=4) == make_queries(b, seed=4)
        other = adversarial(split, **{**MEDIUM, "seed": 6})
        assert other.documents != a.documents


def test_truth_and_gold_are_the_same_in_every_variety():
    plain = generate_world(**MEDIUM)
    dev, held = adversarial("dev"), adversarial("heldout")
    assert plain.truth == dev.truth == held.truth
    assert plain.projects == dev.projects == held.projects
    assert dev.documents != held.documents != plain.documents
    gold = ("scope", "type", "gold_answer", "gold_references", "gold_entities", "probe")
    queries = [make_queries(w, seed=2) for w in (plain, dev, held)]
    assert len({len(q) for q in queries}) == 1
    for rows in zip(*queries, strict=True):
        assert len({tuple(json.dumps(r[k]) for k in gold) for r in rows}) == 1
    assert {q["split"] for q in queries[2]} == {"heldout"}


def test_exports_use_the_keys_their_schema_declares(adv):
    """The banks' declared key names (what the split tests introspect) are the real ones."""

    def keys(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield k
                yield from keys(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v)

    used: set[str] = set()
    for pid, docs in by_project(adv).items():
        schema = ph.SCHEMA_BY_NAME[adv.annotations[pid]["schema"]]
        assert schema.split == adv.split
        for d in docs:
            if d["kind"] != "requisition":
                continue
            text = d["text"]
            if text.startswith("{"):
                found = set(keys(json.loads(text)))
            else:
                found = {line.split(":", 1)[0] for line in text.splitlines()}
            assert found <= set(schema.keys), (schema.name, found - set(schema.keys))
            used.add(schema.name)
    assert len(used) == len(ph.SCHEMAS[adv.split])  # every schema of the half shows up


def _strings(bank) -> set[str]:
    if isinstance(bank, str):
        return {bank}
    if isinstance(bank, dict):
        return set(chain.from_iterable(_strings(v) for v in bank.values()))
    if isinstance(bank, tuple) and len(bank) == 2 and bank[1] in ("any", "office"):
        return {bank[0]}
    return set(chain.from_iterable(_strings(v) for v in bank))


TEXT_BANKS = {
    "BRIEF_OPENERS": ph.BRIEF_OPENERS,
    "BRIEF_LOCATIONS": ph.BRIEF_LOCATIONS,
    "BRIEF_WORKPLACES": ph.BRIEF_WORKPLACES,
    "BRIEF_SKILLS": ph.BRIEF_SKILLS,
    "BRIEF_EXTRA_SKILL": ph.BRIEF_EXTRA_SKILL,
    "BRIEF_NEGATIONS": ph.BRIEF_NEGATIONS,
    "BRIEF_DISTRACTORS": ph.BRIEF_DISTRACTORS,
    "BRIEF_CODES": ph.BRIEF_CODES,
    "BRIEF_CLOSERS": ph.BRIEF_CLOSERS,
    "STAGES": ph.STAGES,
    "REJECT_BLOCKS": ph.REJECT_BLOCKS,
    "REJECT_PROSE": ph.REJECT_PROSE,
    "ADVANCE_NOTES": ph.ADVANCE_NOTES,
    "FEEDBACK_SKILL_NOTES": ph.FEEDBACK_SKILL_NOTES,
    "FEEDBACK_SKILL_ASIDES": ph.FEEDBACK_SKILL_ASIDES,
    "NOTE_DISTRACTORS": ph.NOTE_DISTRACTORS,
    "QUESTIONS": ph.QUESTIONS,
    "SUMMARIES": ph.SUMMARIES,
}


@pytest.mark.parametrize("name", sorted(TEXT_BANKS))
def test_dev_and_heldout_templates_are_disjoint(name):
    bank = TEXT_BANKS[name]
    assert set(bank) == set(ph.SPLITS)
    dev, held = _strings(bank["dev"]), _strings(bank["heldout"])
    assert dev and held and not dev & held
    # Not even the same wording up to case and punctuation.
    assert not {fold(s) for s in dev} & {fold(s) for s in held}


def test_feedback_block_keys_are_disjoint():
    def block_keys(split):
        blocks = _strings(ph.REJECT_BLOCKS[split]) | {
            t for t in _strings(ph.ADVANCE_NOTES[split]) if "\n" in t
        }
        return {snake_key(line.split(":")[0]) for b in blocks for line in b.splitlines()}

    assert not block_keys("dev") & block_keys("heldout")


def test_bank_sizes():
    for split in ph.SPLITS:
        assert len(ph.SCHEMAS[split]) >= 4
        for bank in (ph.BRIEF_OPENERS, ph.BRIEF_LOCATIONS, ph.BRIEF_SKILLS, ph.BRIEF_EXTRA_SKILL):
            assert len(bank[split]) >= 8
        assert len(_strings(ph.BRIEF_WORKPLACES[split])) >= 8
        assert set(ph.BRIEF_WORKPLACES[split]) == set(ph.WORKPLACE_VALUES)
        for family, templates in ph.QUESTIONS[split].items():
            assert len(templates) >= 4, family
        assert set(ph.QUESTIONS[split]) == set(ph.PLAIN_QUESTIONS)
        assert set(ph.SUMMARIES[split]) == set(ph.PLAIN_SUMMARIES)
        assert all(len(t) >= 3 for t in ph.SUMMARIES[split].values())
    assert set(ph.LOCATION_PARTS) == set(LOCATIONS)


def test_schemas_are_split_and_heldout_keys_unknown_to_the_engine():
    keys = {split: {snake_key(k) for s in ph.SCHEMAS[split] for k in s.keys} for split in ph.SPLITS}
    assert not keys["dev"] & keys["heldout"]
    names = {split: {s.name for s in ph.SCHEMAS[split]} for split in ph.SPLITS}
    assert not names["dev"] & names["heldout"]
    unknown = {k for k in keys["heldout"] if k not in KEY_ALIASES}
    assert unknown and len(unknown) * 2 >= len(keys["heldout"])
    # The mix the task asks for: JSON and lines, seniority in the title or not.
    for split in ph.SPLITS:
        assert {s.seniority_in_title for s in ph.SCHEMAS[split]} == {True, False}
        kinds = {s.name.split("_", 1)[1] for s in ph.SCHEMAS[split]}
        assert {"flat_json", "nested_json", "kv_lines"} <= kinds


def test_every_truth_value_is_stated_somewhere(adv):
    docs = by_project(adv)
    for pid, t in adv.truth.items():
        text = "\n".join(d["text"] for d in docs[pid])
        for value in (t.title, ph.city(t.location), *t.skills, *t.rejection_reasons):
            assert appears(value, text), (pid, value)
        assert fold(t.seniority) in fold(text), (pid, t.seniority)
        for reason in t.rejection_reasons:  # reasons are never misspelt
            assert reason in text


def test_workplace_is_in_the_export_or_the_brief(adv):
    docs = by_project(adv)
    for pid, t in adv.truth.items():
        ann = adv.annotations[pid]
        export = current_export(docs[pid])["text"]
        hidden = [h for h in ann["hidden"] if h["attribute"] == "workplace_type"]
        if hidden:
            brief = next(d["text"] for d in docs[pid] if d["kind"] == "brief")
            assert hidden[0]["value"] == t.workplace_type and hidden[0]["evidence"] in brief
            assert hidden[0]["evidence"] in ph.BRIEF_WORKPLACES[adv.split][t.workplace_type]
        else:
            assert ph.SCHEMA_BY_NAME[ann["schema"]].workplace[t.workplace_type] in export


def test_values_hidden_from_the_export_are_in_the_brief_or_a_note(adv):
    docs = by_project(adv)
    where_seen = {"brief": 0, "feedback": 0}
    for pid, t in adv.truth.items():
        export = current_export(docs[pid])["text"]
        for h in adv.annotations[pid]["hidden"]:
            value = ph.city(h["value"]) if h["attribute"] == "location" else h["value"]
            if h["attribute"] == "location":
                assert h["value"] == t.location
                assert value not in export
            if h["attribute"] == "skill":
                assert value in t.skills
                assert value not in export
            holders = [d["text"] for d in docs[pid] if d["kind"] == h["where"]]
            assert any(h["evidence"] in text for text in holders), (pid, h)
            if h["attribute"] != "workplace_type":
                assert value in h["evidence"]  # spelt right: no typo on the only mention
            where_seen[h["where"]] += 1
        if any(h["where"] == "feedback" for h in adv.annotations[pid]["hidden"]):
            brief = next(d["text"] for d in docs[pid] if d["kind"] == "brief")
            skill = next(
                h["value"] for h in adv.annotations[pid]["hidden"] if h["where"] == "feedback"
            )
            assert skill not in brief
    assert where_seen["brief"] and where_seen["feedback"]


def test_negations_and_distractors_are_never_the_truth(adv):
    docs = by_project(adv)
    negations = 0
    for pid, t in adv.truth.items():
        ann = adv.annotations[pid]
        truth = {
            "title": {t.title},
            "location": {ph.city(t.location)},
            "workplace_type": {t.workplace_type},
            "skill": set(t.skills),
        }
        brief = next(d["text"] for d in docs[pid] if d["kind"] == "brief")
        for n in ann["negated"]:
            negations += 1
            assert n["value"] not in truth[n["attribute"]], (pid, n)
            assert n["evidence"] in brief
            if n["attribute"] == "workplace_type":
                assert n["value"] in ph.NEGATABLE_WORKPLACES[t.workplace_type]
        for x in ann["distractors"]:
            assert x["value"] not in truth[x["attribute"]], (pid, x)
    assert negations > len(adv.truth) * 0.15


def test_typos_only_touch_values_the_export_states(adv):
    docs = by_project(adv)
    typos = 0
    for pid in adv.truth:
        export = current_export(docs[pid])["text"]
        prose = "\n".join(d["text"] for d in docs[pid] if d["kind"] != "requisition")
        for x in adv.annotations[pid]["typos"]:
            typos += 1
            value = ph.city(x["value"]) if x["value"] in ph.LOCATION_PARTS else x["value"]
            assert value in export and x["typo"] in prose and x["typo"] != x["value"]
            assert x["typo"] not in export
    assert typos  # a few, not none


def test_shares_are_roughly_as_documented():
    world = generate_world(seed=11, split="heldout", variety="adversarial")
    n = len(world.truth)
    hidden = [a["hidden"] for a in world.annotations.values()]
    prose_only = sum(any(h["where"] == "brief" for h in hs) for hs in hidden) / n
    feedback_only = sum(any(h["where"] == "feedback" for h in hs) for hs in hidden) / n
    assert 0.12 < prose_only < 0.4 and 0.08 < feedback_only < 0.35
    superseded = sum(
        1
        for pid in world.truth
        if sum(d["kind"] == "requisition" for d in by_project(world)[pid]) > 1
    )
    assert superseded  # superseded requisitions stay


def test_adversarial_questions_come_from_the_worlds_half(adv):
    rows = make_queries(adv, seed=5)
    own = ph.QUESTIONS[adv.split]
    other = ph.QUESTIONS["dev" if adv.split == "heldout" else "heldout"]
    own_forms = {ph.slot_form(t) for t in _strings(own)}
    other_forms = {ph.slot_form(t) for t in _strings(other)}
    own_summaries = _strings(ph.SUMMARIES[adv.split])
    for q in rows:
        assert q["split"] == adv.split
        if q["type"] == "summary":
            assert q["template"] in own_summaries
        else:
            assert q["template"] in own_forms and q["template"] not in other_forms
    assert {q["probe"] for q in rows} == {True, False}  # leakage probes stay
    families = {q["family"] for q in rows}
    assert {"title_location", "skill", "rejection_reason", "title_reason"} <= families
    assert len({q["template"] for q in rows if q["family"] == "skill"}) >= 3


def test_evolve_keeps_the_phrasing():
    world = adversarial("heldout")
    v2, changes = evolve(world, seed=9)
    assert (v2.variety, v2.split) == ("adversarial", "heldout")
    new_docs = {d["doc_id"]: d for d in v2.documents}
    old_ids = {d["doc_id"] for d in world.documents}
    edits = [
        d for i, d in new_docs.items() if i not in old_ids and d["project_id"] in changes["edited"]
    ]
    assert edits
    plain_words = ("Candidate:", "Debrief for", "Interview feedback for")
    assert not any(d["text"].startswith(plain_words) for d in edits)
    for pid in changes["edited"]:
        text = "\n".join(d["text"] for d in v2.documents if d["project_id"] == pid)
        assert all(r in text for r in v2.truth[pid].rejection_reasons)
    assert set(changes["added"]) <= set(v2.annotations)


def test_sample_cli_writes_the_chosen_phrasing(tmp_path):
    def sample(*args):
        out = tmp_path / "-".join(args or ("default",))
        subprocess.run(
            [sys.executable, "-m", "hltm_assets.cli", "sample", str(out), "--seed", "3", *args],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        return (out / "documents.jsonl").read_bytes()

    plain = sample("--plain")
    assert hashlib.sha256(plain).hexdigest() == PLAIN_SEED3_SHA256["documents"]
    dev, held = sample(), sample("--split", "heldout")
    assert dev != held != plain
    assert dev == "".join(
        json.dumps(r, ensure_ascii=False) + "\n"
        for r in generate_world(seed=3, split="dev", variety="adversarial").documents
    ).encode("utf-8")
