"""A published split version reads as a dataset: its card (README.md) and typed rejections.

The split is `full_build` (every intent over every shared real file, with the oracle check): it
has more than 100 rejections of eight reasons, so a reader that infers types from the first rows
would meet reasons it has not seen.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ecombench.schemas import schema_errors
from ecombench.schemas.evidence import COMMON, FIELD_TYPES, REASON_FIELDS, shape_evidence
from ecombench.schemas.findings import REASONS


def _card(path):
    text = (path / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(header), body


@pytest.fixture(scope="module")
def load_dataset(tmp_path_factory):
    """`datasets.load_dataset` with the hub switched off: a local folder must need no network."""
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    datasets = pytest.importorskip("datasets")
    cache = tmp_path_factory.mktemp("hf-cache")
    return lambda *args, **kw: datasets.load_dataset(*args, cache_dir=str(cache), **kw)


def test_a_version_folder_has_a_dataset_card_with_its_checksum(full_build):
    entry = full_build.manifest["files"]["README.md"]
    from ecombench.hashing import sha256_hex
    assert entry["sha256"] == sha256_hex((full_build.path / "README.md").read_bytes())


def test_the_card_header_names_both_configs_with_their_files_and_features(full_build):
    header, _ = _card(full_build.path)
    configs = {c["config_name"]: c for c in header["configs"]}
    assert configs["tasks"]["data_files"] == [{"split": "test", "path": "tasks.jsonl"}]
    assert configs["rejections"]["data_files"] == [{"split": "test", "path": "rejections.jsonl"}]
    info = {i["config_name"]: i for i in header["dataset_info"]}
    assert info["tasks"]["splits"][0]["num_examples"] == len(full_build.tasks)
    assert info["rejections"]["splits"][0]["num_examples"] == len(full_build.rejections)
    assert {f["name"] for f in info["rejections"]["features"]} >= {"reason", "stage", "message", "evidence"}


def test_the_card_carries_licence_source_paper_and_how_it_was_built(full_build):
    header, body = _card(full_build.path)
    m = full_build.manifest
    assert header["license"] == "other" and "Amazon Reviews 2023" in header["license_details"]
    assert header["ecombench"]["config_hash"] == m["config_hash"]
    assert header["ecombench"]["catalog_fingerprint"] == m["catalog"]["fingerprint"]
    assert header["ecombench"]["verbaliser"] == m["verbaliser"]["id"] and header["ecombench"]["agent_checks"]
    assert "2606.17698" in body and "2403.03952" in body
    assert f"oracle solved {m['agent_checks']['oracle']['solved']} of" in body
    for reason in m["counts"]["rejection_reasons"]:
        assert f"--reason {reason}`" in body


def test_datasets_reads_tasks_and_rejections_by_the_card_alone(full_build, load_dataset):
    tasks = load_dataset(str(full_build.path), "tasks", split="test")
    rejections = load_dataset(str(full_build.path), "rejections", split="test")
    assert tasks.num_rows == len(full_build.tasks) and rejections.num_rows == len(full_build.rejections)
    assert sorted(tasks["id"]) == sorted(t["id"] for t in full_build.tasks)
    first = rejections[0]
    assert json.loads(first["evidence"]) == full_build.rejections[0]["evidence"]


def test_polars_reads_rejections_jsonl_with_no_options(full_build):
    pl = pytest.importorskip("polars")
    frame = pl.read_ndjson(full_build.path / "rejections.jsonl")
    assert frame.height == len(full_build.rejections) > 100
    assert frame.schema["evidence"] == pl.String and frame.schema["stage"] == pl.Int64
    assert frame["reason"].n_unique() >= 5
    # One reason's evidence decodes to one typed struct.
    from ecombench.schemas.evidence import polars_dtype

    pins = frame.filter(pl.col("reason") == "query_pins_target").select(
        pl.col("evidence").str.json_decode(polars_dtype("query_pins_target")))
    want = [r["evidence"]["query_answer_set_size"] for r in full_build.rejections if r["reason"] == "query_pins_target"]
    assert pins["evidence"].struct.field("query_answer_set_size").to_list() == want


def test_tasks_jsonl_reads_in_polars_with_no_options(full_build):
    pl = pytest.importorskip("polars")
    assert pl.read_ndjson(full_build.path / "tasks.jsonl").height == len(full_build.tasks)


def test_duckdb_reads_rejections_and_their_evidence(full_build):
    duckdb = pytest.importorskip("duckdb")
    path = full_build.path / "rejections.jsonl"
    rows = duckdb.sql(f"select reason, evidence from read_json_auto('{path}')").fetchall()
    assert len(rows) == len(full_build.rejections)
    oracle = duckdb.sql(f"select cast(evidence->>'$.tool_calls' as integer) from read_json_auto('{path}') "
                        "where reason = 'oracle_failed'").fetchall()
    assert all(isinstance(n, int) for (n,) in oracle)


def test_rejections_parquet_holds_the_same_rows_with_typed_evidence(full_build):
    pl = pytest.importorskip("polars")
    frame = pl.read_parquet(full_build.path / "rejections.parquet")
    assert frame["candidate_id"].to_list() == [r["candidate_id"] for r in full_build.rejections]
    assert set(frame.schema["evidence"].to_schema()) == set(FIELD_TYPES)
    row = frame.row(0, named=True)
    assert {k: v for k, v in row["evidence"].items() if k in full_build.rejections[0]["evidence"]} \
        == full_build.rejections[0]["evidence"]


def test_every_published_evidence_matches_its_reasons_schema_and_nothing_is_left_over(full_build):
    for r in full_build.rejections:
        assert schema_errors(f"evidence/{r['reason']}", r["evidence"]) == [], r["candidate_id"]
        assert r["evidence"]["extra"] is None, (r["reason"], r["evidence"]["extra"])


def test_every_reason_of_a_build_stage_has_an_evidence_shape():
    assert set(REASON_FIELDS) == {r for stage, reasons in REASONS.items() if stage >= 1 for r in reasons}
    assert all(set(keys) <= set(FIELD_TYPES) for keys in REASON_FIELDS.values())


def test_a_split_count_is_renamed_so_features_keeps_one_type():
    shaped = shape_evidence("partition_infeasible", {"features": 4, "needed": 5, "fields": ["details.Color"]})
    assert shaped["feature_count"] == 4 and "features" not in shaped and shaped["fields"] == ["details.Color"]
    assert shape_evidence("too_few_features", {"features": ["price"]})["features"] == ["price"]


def test_an_undeclared_key_or_a_misfit_value_is_kept_in_extra():
    shaped = shape_evidence("answer_set_too_large", {"answer_set_size": "many", "bound": 5, "note": [1]})
    assert shaped["answer_set_size"] is None and shaped["bound"] == 5
    assert json.loads(shaped["extra"]) == {"answer_set_size": "many", "note": [1]}
    assert set(shaped) == set(REASON_FIELDS["answer_set_too_large"]) | set(COMMON)


def test_a_free_form_value_becomes_json_text():
    shaped = shape_evidence("persona_noise_not_whitelisted", {"field": "lifestyle", "value": {"hobbies": ["x"]}})
    assert shaped["value"] == '{"hobbies": ["x"]}'
