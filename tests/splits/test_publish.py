"""Publishing a split version from real build results (splits/publish.py)."""

from __future__ import annotations

import copy
import json

import pytest

from ecombench.catalog.snapshot import load_snapshot
from ecombench.hashing import sha256_hex
from ecombench.pipeline.build import assemble
from ecombench.schemas import SchemaError, schema_errors
from ecombench.splits.publish import VersionExists, next_version, publish_split

FILES = {"tasks.jsonl", "rejections.jsonl", "rejections.parquet", "manifest.json", "report.md", "report.html",
         "README.md"}


@pytest.fixture(scope="module")
def published(rich_plan, rich_results, rich_catalog, tmp_path_factory):
    """The rich plan's results published as splits/dev/v1 under a temporary root."""
    ctx, products, sampling = rich_plan
    _, catalog_manifest = load_snapshot(rich_catalog.path)
    root = tmp_path_factory.mktemp("splits")
    outcome = assemble(ctx.config, ctx, products, sampling, catalog_manifest, [r for _, _, r in rich_results],
                       "dev", "v1", root)
    return root, outcome


@pytest.fixture(scope="module")
def records(rich_results):
    tasks = [r.task for _, _, r in rich_results if r.task]
    rejections = [r.rejection for _, _, r in rich_results if r.rejection]
    return tasks, rejections


@pytest.fixture(scope="module")
def base_manifest(published):
    _, outcome = published
    return {k: v for k, v in outcome.manifest.items() if k not in ("files", "counts")}


def snapshot_dir(path):
    return {p.name: p.read_bytes() for p in path.iterdir()}


def test_publish_writes_every_file(published):
    _, outcome = published
    assert {p.name for p in outcome.path.iterdir()} == FILES


def test_published_rows_match_the_results(published, records):
    _, outcome = published
    tasks, rejections = records
    lines = (outcome.path / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(tasks)
    assert len((outcome.path / "rejections.jsonl").read_bytes().splitlines()) == len(rejections)


def test_published_tasks_are_sorted_by_id_and_schema_valid(published):
    _, outcome = published
    tasks = [json.loads(line) for line in (outcome.path / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [t["id"] for t in tasks] == sorted(t["id"] for t in tasks)
    assert all(schema_errors("task", t) == [] for t in tasks)


def test_manifest_file_digests_match_the_files(published):
    _, outcome = published
    for name, entry in outcome.manifest["files"].items():
        data = (outcome.path / name).read_bytes()
        rows = outcome.manifest["counts"]["rejections"] if name.endswith(".parquet") else data.count(b"\n")
        assert (entry["sha256"], entry["bytes"], entry["rows"]) == (sha256_hex(data), len(data), rows)


def test_manifest_matches_its_schema(published):
    assert schema_errors("split_manifest", published[1].manifest) == []


def test_manifest_counts_come_from_the_records(published, records):
    tasks, rejections = records
    counts = published[1].manifest["counts"]
    assert (counts["tasks"], counts["rejections"]) == (len(tasks), len(rejections))


def test_next_version_follows_the_published_one(published):
    root, _ = published
    assert next_version(root / "dev") == "v2"


def test_an_existing_version_is_refused_and_left_untouched(published, records, base_manifest):
    root, outcome = published
    before = snapshot_dir(outcome.path)
    tasks, rejections = records
    with pytest.raises(VersionExists):
        publish_split(root, "dev", "v1", tasks[:1], [], dict(base_manifest, version="v1"))
    assert snapshot_dir(outcome.path) == before


def test_a_schema_invalid_task_is_refused_and_nothing_is_written(tmp_path, records, base_manifest):
    tasks, rejections = records
    broken = copy.deepcopy(tasks[:3])
    del broken[1]["rubric_lock"]  # a real task with its lock removed
    with pytest.raises(SchemaError, match=broken[1]["id"]):
        publish_split(tmp_path, "dev", "v9", broken, rejections, dict(base_manifest, version="v9"))
    assert list(tmp_path.rglob("*")) == []  # no version, no temporary directory, not even the split directory


def test_a_schema_invalid_rejection_is_refused(tmp_path, records, base_manifest):
    tasks, rejections = records
    broken = copy.deepcopy(rejections[:1])
    broken[0]["stage"] = 9
    with pytest.raises(SchemaError):
        publish_split(tmp_path, "dev", "v9", tasks, broken, dict(base_manifest, version="v9"))
    assert not (tmp_path / "dev" / "v9").exists()


def test_the_same_results_publish_byte_identical_tasks(published, records, base_manifest, tmp_path):
    _, outcome = published
    tasks, rejections = records
    again = publish_split(tmp_path, "dev", "v2", list(reversed(tasks)), rejections, dict(base_manifest, version="v2"))
    assert (again / "tasks.jsonl").read_bytes() == (outcome.path / "tasks.jsonl").read_bytes()


def test_an_interruption_before_the_rename_publishes_nothing(records, base_manifest, tmp_path):
    tasks, rejections = records

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        publish_split(tmp_path, "dev", "v1", tasks, rejections, dict(base_manifest, version="v1"),
                      before_rename=interrupted)
    assert list((tmp_path / "dev").iterdir()) == []  # neither the version nor its temporary folder


@pytest.mark.parametrize("split, version", [("../escaped", "v1"), ("dev", "../v1"), (".hidden", "v1")])
def test_a_name_that_is_not_one_folder_is_refused(records, base_manifest, tmp_path, split, version):
    from ecombench.errors import SettingError

    tasks, rejections = records
    with pytest.raises(SettingError, match="one folder name|start with"):
        publish_split(tmp_path / "splits", split, version, tasks, rejections, base_manifest)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "splits").exists()


def test_a_build_that_accepts_no_task_publishes_nothing(rich_plan, rich_results, rich_catalog, tmp_path):
    from ecombench.pipeline.build import EmptySplit

    ctx, products, sampling = rich_plan
    _, catalog_manifest = load_snapshot(rich_catalog.path)
    rejected = [r for _, _, r in rich_results if r.task is None]
    with pytest.raises(EmptySplit, match="--allow-empty"):
        assemble(ctx.config, ctx, products, sampling, catalog_manifest, rejected, "dev", "v1", tmp_path)
    assert list(tmp_path.iterdir()) == []
