"""The chain of trust from catalog to grade: a changed snapshot stops the build, a changed split or another
catalog stops run-agent / grade / validate / report / diff with one line naming the file (in-process, no Prefect)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.integrity import verify_snapshot
from ecombench.catalog.snapshot import SnapshotError
from ecombench.flows.cli import app
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig

SAMPLE = Path(__file__).resolve().parents[2] / "ecombench" / "data" / "sample"
runner = CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory, artifacts):
    """A real split over a private copy of the sample snapshot, and a second snapshot of other real products."""
    tmp = tmp_path_factory.mktemp("integrity")
    write_catalog_snapshot([SAMPLE / "meta.jsonl.gz"], [SAMPLE / "reviews.jsonl.gz"], tmp / "catalog", workers=1)
    lines = __import__("gzip").open(SAMPLE / "meta.jsonl.gz", "rb").read().splitlines(keepends=True)
    (tmp / "other.jsonl").write_bytes(b"".join(lines[:200]))
    write_catalog_snapshot([tmp / "other.jsonl"], [], tmp / "other", workers=1)
    # issue #12's quality rules off: from 30 candidates per intent they leave few tasks to edit
    outcome = build_split(BuildConfig(catalog=str(tmp / "catalog"), intents=["product_search", "rating_quality"],
                                      candidates_per_intent=30, min_hidden_answer_set=1, min_hidden_division=1,
                                      min_value_support=1),
                          "trust", root=tmp / "splits", artifacts=artifacts)
    return tmp, outcome.path


def _error_line(result) -> str:
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.output
    return errors[0]


def _copy_split(built, tmp_path) -> Path:
    _, version = built
    copy = tmp_path / "splits" / "trust" / "v1"
    shutil.copytree(version, copy)
    return copy


def test_the_split_manifest_records_the_absolute_catalog_path_beside_its_fingerprint(built):
    tmp, version = built
    catalog = json.loads((version / "manifest.json").read_text())["catalog"]
    assert catalog["path"] == str((tmp / "catalog").resolve()) and Path(catalog["path"]).is_absolute()
    assert catalog["fingerprint"] == json.loads((tmp / "catalog" / "manifest.json").read_text())["fingerprint"]


def test_a_snapshot_is_verified_once_then_from_the_size_and_mtime_cache(built, tmp_path):
    tmp, _ = built
    assert set(verify_snapshot(tmp / "catalog", tmp_path).values()) == {"hashed"}
    assert set(verify_snapshot(tmp / "catalog", tmp_path).values()) == {"cached"}


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_changed_snapshot_file_stops_the_build_naming_it(built, tmp_path, damage):
    tmp, _ = built
    catalog = tmp_path / "catalog"
    shutil.copytree(tmp / "catalog", catalog)
    products = catalog / "products.parquet"
    data = bytearray(products.read_bytes())
    if damage == "flip":
        middle = len(data) // 2
        data[middle:middle + 4096] = bytes(b ^ 0xFF for b in data[middle:middle + 4096])
    else:
        data = data[: len(data) // 2]
    products.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="products.parquet") as err:
        build_split(BuildConfig(min_hidden_division=1,
                                catalog=str(catalog), intents=["product_search"], candidates_per_intent=5),
                    "x", root=tmp_path / "splits", artifacts=tmp_path / "artifacts")
    assert len(str(err.value).splitlines()) == 1
    assert _error_line(runner.invoke(app, ["verify", str(catalog)])).count("products.parquet") == 1


def test_an_edited_split_is_refused_by_every_reader_naming_the_file(built, tmp_path):
    tmp, _ = built
    version = _copy_split(built, tmp_path)
    tasks = version / "tasks.jsonl"
    lines = tasks.read_text().splitlines()
    first = json.loads(lines[0])
    first["target_product"]["product_id" if "product_id" in first["target_product"] else "parent_asin"] = "B000000000"
    tasks.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    for args in (["run-agent", str(version), "--out", str(tmp_path / "t.jsonl")],
                 ["report", str(version)],
                 ["validate", str(tasks), "--catalog", str(tmp / "catalog"), "--out", str(tmp_path / "f.jsonl")],
                 ["verify", str(version)]):
        line = _error_line(runner.invoke(app, args))
        assert str(tasks) in line and "sha256" in line, (args, line)


def test_allow_modified_goes_on_and_records_it_in_the_output(built, tmp_path):
    version = _copy_split(built, tmp_path)
    (version / "report.md").write_text("edited\n")
    out = tmp_path / "oracle.jsonl"
    result = runner.invoke(app, ["run-agent", str(version), "--out", str(out), "--limit", "2", "--allow-modified"])
    assert result.exit_code == 0, result.output
    assert all(str(version / "report.md") in json.loads(x)["allow_modified"][0] for x in out.read_text().splitlines())
    refused = runner.invoke(app, ["grade", str(out), "--split", str(version)])
    assert "report.md" in _error_line(refused)
    result = runner.invoke(app, ["grade", str(out), "--split", str(version), "--allow-modified"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "oracle.metrics.json").read_text())
    assert "report.md" in metrics["allow_modified"][0]


def test_another_catalog_than_the_splits_is_refused(built, tmp_path):
    tmp, version = built
    for args in (["run-agent", str(version), "--catalog", str(tmp / "other"), "--out", str(tmp_path / "t.jsonl")],
                 ["verify", str(version), "--catalog", str(tmp / "other")]):
        line = _error_line(runner.invoke(app, args))
        assert str(tmp / "other") in line and "fingerprint" in line


def test_an_untouched_split_passes_every_reader(built, tmp_path):
    tmp, version = built
    assert runner.invoke(app, ["verify", str(version)]).exit_code == 0
    assert runner.invoke(app, ["report", str(version)]).exit_code == 0
    out = tmp_path / "null.jsonl"
    assert runner.invoke(app, ["run-agent", str(version), "--agent", "null", "--out", str(out)]).exit_code == 0
    assert runner.invoke(app, ["grade", str(out), "--split", str(version)]).exit_code == 0
