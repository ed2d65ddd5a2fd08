"""The category report (stages/categories.py) and `ecombench categories`, on real snapshots.

Two real catalogs: the bundled sample (conftest `sample_catalog`) and the shared Amazon Home /
Toys & Games / Sports & Outdoors metadata file (skipped when ../shared/data is absent). The
report's numbers are checked against direct counts; eligibility against the sampler itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from ecombench.stages.categories import ALIAS, FIELD, IGNORED, MISSING, category_report, eligible_mask, key_status
from ecombench.stages.sampling import NO_CATEGORY, eligibility_columns, sample_candidates
from ecombench.tables.intents import load_intents

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
HOME_META = SHARED_DATA / "amazon-reviews-2023" / "meta_home_toys_sports.jsonl"
HOME_CATEGORIES = ["Amazon Home", "Toys & Games", "Sports & Outdoors"]


class Snapshot:
    """A snapshot directory with its products and the field table it was read with."""

    def __init__(self, path: Path):
        from ecombench.catalog.snapshot import load_snapshot
        from ecombench.tables.fields import load_field_table

        self.path = path
        self.products, _ = load_snapshot(path)
        self.table = load_field_table()


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Snapshot:
    """Snapshot of meta_home_toys_sports.jsonl (3,837 real products)."""
    if not SHARED_DATA.is_dir() or not HOME_META.is_file():
        pytest.skip(f"shared real data not found at {HOME_META} (clone shared/ beside the repository)")
    from ecombench.catalog.ingest import write_catalog_snapshot

    out = tmp_path_factory.mktemp("catalogs") / "home"
    write_catalog_snapshot([HOME_META], [], out)
    return Snapshot(out)


@pytest.fixture(scope="module")
def sample(sample_catalog) -> Snapshot:
    return Snapshot(sample_catalog.path)


@pytest.fixture(params=["sample", "home"])
def snapshot(request) -> Snapshot:
    return request.getfixturevalue(request.param)


def report_of(snap: Snapshot, **kw) -> dict:
    return category_report(snap.products, snap.table, load_intents(), **kw)


def by_category(report: dict) -> dict[str, dict]:
    return {c["main_category"]: c for c in report["categories"]}


def hand_count(snap: Snapshot, category: str, key: str) -> tuple[int, int]:
    """(products of `category` with a non-empty `key`, products of `category`), by a plain loop."""
    rows = [p for p in snap.products.to_dicts() if (p["main_category"] or NO_CATEGORY) == category]
    having = [p for p in rows if any(d["key"] == key and d["value"].strip() for d in p["details"] or [])]
    return len(having), len(rows)


# ---- counts and coverage -----------------------------------------------------------------------

def test_product_counts_per_category_equal_a_direct_count(snapshot):
    direct = dict(snapshot.products.group_by(pl.col("main_category").fill_null(NO_CATEGORY)).len().iter_rows())
    report = report_of(snapshot)
    assert {c["main_category"]: c["products"] for c in report["categories"]} == direct
    assert report["products"] == snapshot.products.height


def test_products_without_a_category_are_reported_as_none(sample):
    # The bundled sample holds 90 real products with no main_category (its reviewed products).
    assert by_category(report_of(sample))[NO_CATEGORY]["products"] == 90


def test_categories_come_largest_first(home):
    report = report_of(home)
    assert [(c["main_category"], c["products"]) for c in report["categories"]] == [
        ("Amazon Home", 2646), ("Sports & Outdoors", 629), ("Toys & Games", 562)]


def test_coverage_of_a_real_key_equals_a_hand_count_in_the_sample(sample):
    having, size = hand_count(sample, "Cell Phones & Accessories", "Other display features")
    row = next(k for k in by_category(report_of(sample, top=100))["Cell Phones & Accessories"]["keys"]
               if k["key"] == "Other display features")
    assert (row["products"], having, size) == (108, 108, 114)
    assert row["coverage"] == round(108 / 114, 4)


def test_coverage_of_a_real_key_equals_a_hand_count_in_toys(home):
    having, size = hand_count(home, "Toys & Games", "Manufacturer recommended age")
    row = next(k for k in by_category(report_of(home))["Toys & Games"]["keys"]
               if k["key"] == "Manufacturer recommended age")
    assert (row["products"], having, size) == (465, 465, 562)
    assert row["coverage"] == round(465 / 562, 4)


def test_keys_are_listed_by_descending_coverage_and_cut_at_top(home):
    keys = by_category(report_of(home, top=7))["Amazon Home"]["keys"]
    assert len(keys) == 7
    assert [k["products"] for k in keys] == sorted((k["products"] for k in keys), reverse=True)


# ---- field table status ------------------------------------------------------------------------

def test_frequent_keys_missing_from_the_table_are_listed(sample):
    phones = by_category(report_of(sample))["Cell Phones & Accessories"]
    missing = {k["key"] for k in phones["not_in_table"]}
    assert {"Other display features", "Whats in the box", "Is Discontinued By Manufacturer"} <= missing
    assert all(k["coverage"] >= 0.10 for k in phones["not_in_table"])


def test_table_fields_and_ignored_keys_are_never_listed_as_missing(snapshot):
    for c in report_of(snapshot, top=10_000)["categories"]:
        status = {k["key"]: k["status"] for k in c["keys"]}
        for k in c["not_in_table"]:
            assert k["key"] not in snapshot.table.fields
            assert status[k["key"]] == MISSING
        assert {k["key"] for k in c["not_in_table"]} == {
            k["key"] for k in c["keys"] if k["status"] == MISSING and k["coverage"] >= 0.10}


def test_rows_added_for_home_toys_sports_are_usable_fields(home):
    report = by_category(report_of(home, top=10_000))
    toys = {k["key"]: k["status"] for k in report["Toys & Games"]["keys"]}
    home_keys = {k["key"]: k["status"] for k in report["Amazon Home"]["keys"]}
    assert toys["Manufacturer recommended age"] == FIELD
    assert home_keys["Top Style"] == home_keys["Frame Type"] == home_keys["Pile Height"] == FIELD
    assert toys["Release date"] == MISSING  # a date, deliberately left out of the table
    assert toys["Manufacturer"] == IGNORED  # listed under [defaults] other_keys


def test_key_status_names_the_field_an_unmapped_alias_belongs_to(sample):
    # "Fabric Type" is an alias of Material: a snapshot ingested before the alias existed keeps
    # the raw key, and the report says to re-ingest rather than to add a row.
    assert key_status("Fabric Type", sample.table) == (ALIAS, "Material")
    assert key_status("Material", sample.table) == (FIELD, "Material")
    assert key_status("Item Weight", sample.table) == (IGNORED, None)
    assert key_status("Hardware Platform", sample.table) == (MISSING, None)


# ---- eligibility agrees with the sampler --------------------------------------------------------

def test_eligibility_agrees_with_sample_candidates(snapshot):
    eligibility = eligibility_columns(snapshot.products, snapshot.table)
    report = by_category(report_of(snapshot))
    for intent in load_intents().values():
        mask = eligible_mask(eligibility, intent)
        for category, row in report.items():
            expected = set(eligibility.filter(mask & (pl.col("main_category") == category))
                           .get_column("parent_asin"))
            drawn = sample_candidates(eligibility, intent, eligibility.height, seed=0, categories=[category])
            assert set(drawn.candidates) == expected, (intent.name, category)
            assert drawn.eligible == row["eligible"][intent.name] == len(expected), (intent.name, category)


# ---- CLI ---------------------------------------------------------------------------------------

def test_cli_prints_the_report_as_json(home):
    from ecombench.flows.cli import app

    result = CliRunner().invoke(app, ["categories", "--catalog", str(home.path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert sorted(c["main_category"] for c in report["categories"]) == sorted(HOME_CATEGORIES)
    assert report == json.loads(json.dumps(report_of(home)))


def test_cli_prints_one_block_per_category(sample):
    from ecombench.flows.cli import app

    result = CliRunner().invoke(app, ["categories", "--catalog", str(sample.path), "--top", "3"])
    assert result.exit_code == 0, result.output
    for c in report_of(sample)["categories"]:
        assert f"== {c['main_category']}: {c['products']} products" in result.stdout


def test_cli_names_a_missing_catalog_in_one_error_line(tmp_path):
    from ecombench.flows.cli import app

    missing = tmp_path / "no-such-snapshot"
    result = CliRunner().invoke(app, ["categories", "--catalog", str(missing), "--json"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and str(missing) in lines[0]
    assert result.stdout == ""



def test_cli_names_a_malformed_field_row_in_one_error_line(sample, tmp_path, monkeypatch):
    # A new row reusing another field's keyword ("handle" belongs to Handle Material).
    import ecombench.tables.fields
    from ecombench.flows.cli import app

    bad = tmp_path / "fields.toml"
    bad.write_text(ecombench.tables.fields.FIELD_TABLE.read_text(encoding="utf-8") + """
[fields."Blade Material"]
label = "blade material"
sources = ["query", "clarification"]
keywords = ["blade material", "blade", "handle", "knife blade", "steel type", "edge", "cutting edge"]
""", encoding="utf-8")
    monkeypatch.setattr(ecombench.tables.fields, "FIELD_TABLE", bad)
    ecombench.tables.fields._load_field_table.cache_clear()
    try:
        result = CliRunner().invoke(app, ["categories", "--catalog", str(sample.path)])
    finally:
        monkeypatch.undo()
        ecombench.tables.fields._load_field_table.cache_clear()
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "'Blade Material'" in lines[0]

# ---- builds restricted to one category ---------------------------------------------------------

@pytest.mark.parametrize("category", HOME_CATEGORIES)
def test_a_build_restricted_to_a_category_accepts_tasks_of_that_category(home, category, tmp_path, artifacts):
    from ecombench.pipeline.build import build_split
    from ecombench.pipeline.config import BuildConfig

    out = build_split(BuildConfig(min_hidden_division=1,
                                  catalog=str(home.path), categories=[category], candidates_per_intent=12),
                      "one-category", root=tmp_path, artifacts=artifacts,
                      allow_empty=True)  # 12 candidates per intent of one category may all be rejected
    tasks = [json.loads(line) for line in (out.path / "tasks.jsonl").read_text().splitlines()]
    rejected = {json.loads(line)["parent_asin"] for line in (out.path / "rejections.jsonl").read_text().splitlines()}
    categories = dict(home.products.select("parent_asin", "main_category").iter_rows())
    # most of the 12 asked of each intent: the file alone holds 11 products of Sports & Outdoors eligible for some
    # intents, and each product serves one intent
    assert out.manifest["counts"]["tasks"] == len(tasks) and len(tasks) + len(rejected) >= 10
    assert {t["target_product"]["main_category"] for t in tasks} <= {category}
    assert {categories[a] for a in rejected} == {category}
