"""Catalog statistics computed once, at ingest, and read by every build over the same snapshot.

What a build derives from the snapshot alone: the normalised titles, detail options and review texts
the answer-set index reads (`ecombench.answers.norms.CatalogNorms`), the per-field value vocabulary of
every intent's negative fields (`ecombench.catalog.details.field_vocabulary`), the product-type vocabulary
learned from the catalog with its evidence and every product's type (`ecombench.catalog.type_vocabulary`,
`ecombench.catalog.product_type.product_types`), and the great-expectations catalog suite's result
(`ecombench.validation.expectations.catalog_suite`). `ecombench ingest` writes them to
`<snapshot>/stats/` (a temporary directory renamed when complete); `stats.json` records the snapshot
fingerprint and a digest of the code and tables that make them, so a build uses them only when both
match and otherwise computes them as before. They are a cache: deleting `stats/` changes nothing but
the build's time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ecombench.answers.norms import CatalogNorms, option_norms, review_text_norms, title_norms
from ecombench.catalog.details import VocabularyCounts, owned_strings
from ecombench.catalog.facts import (
    CatalogFacts,
    FactVocabulary,
    facts_in_slices,
    read_vocabulary,
    stated_rows,
)
from ecombench.catalog.knowledge import (
    ProductKnowledge,
    learn_product_knowledge,
    read_knowledge,
    write_knowledge,
)
from ecombench.catalog.snapshot import SnapshotError, check_snapshot, load_manifest
from ecombench.catalog.type_stats import TypeRules, TypeStats
from ecombench.catalog.type_vocabulary import OVERRIDE_TABLE
from ecombench.hashing import source_digest
from ecombench.tables.fields import FieldTable, load_field_table
from ecombench.tables.intents import load_intents
from ecombench.validation.expectations import catalog_suite_in_parts

STATS_DIR = "stats"
# Another catalog's fact vocabulary, copied into the snapshot at ingest (`ecombench ingest --vocabulary-from`) and
# read beneath the snapshot's own wherever its knowledge is learned (ecombench.catalog.facts.with_base).
BASE_VOCABULARY_DIR = "base_vocabulary"
BASE_FILES = ("fact_vocabulary.parquet", "fact_vocabulary.json", "type_fields.parquet", "type_values.parquet",
              "type_stats.json", "type_evidence.parquet")
STATS_VERSION = 2


def stats_digest(table: FieldTable) -> str:
    """sha256 over the statistics' version, the code that computes them, the field table in use and the override.

    The code is this module and what it imports (`ecombench.hashing.source_digest`); the override is the
    product-type vocabulary's reviewed table (tables/product_types.toml).
    """
    h = hashlib.sha256(str(STATS_VERSION).encode())
    h.update(source_digest("ecombench.validation.catalog_stats").encode())
    h.update(Path(table.source_path).read_bytes())
    h.update(OVERRIDE_TABLE.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class CatalogStats:
    """The statistics of one snapshot.

    Attributes:
        norms: normalised titles, detail options and review texts (None when loaded without them).
        vocabulary: `field_vocabulary` over `vocabulary_fields`: {main_category: {field: [value, ...]}}.
        vocabulary_fields: the fields it covers (every intent's negative fields).
        catalog_suite: the catalog suite's summary (`ecombench.validation.expectations.catalog_suite`), or None.
        knowledge: the product facts, types and per-type statistics (`ecombench.catalog.knowledge`).
    """

    norms: CatalogNorms | None
    vocabulary: dict[str, dict[str, list[str]]]
    vocabulary_fields: list[str]
    catalog_suite: dict[str, Any] | None
    knowledge: ProductKnowledge | None = None

    def vocabulary_for(self, fields: list[str]) -> dict[str, dict[str, list[str]]] | None:
        """`field_vocabulary(..., fields)` from the stored table, or None when it does not cover `fields`.

        The ranking is per (main_category, field), so the vocabulary of fewer fields is the stored one
        restricted to them (categories left with no field dropped).
        """
        if not set(fields) <= set(self.vocabulary_fields):
            return None
        out = {}
        for scope, by_field in self.vocabulary.items():
            kept = {f: v for f, v in by_field.items() if f in fields}
            if kept:
                out[scope] = kept
        return out


def negative_fields(table: FieldTable) -> list[str]:
    """Every intent's negative fields that the field table knows (what a build's vocabulary may ask for)."""
    return sorted({f for i in load_intents().values() for f in i.negative_fields if f in table.fields})


# What the statistics read of products.parquet: not features or description (the largest columns), and of the
# details only key and value (without raw_key, reading the 3.7M-product snapshot took 5.7 s instead of 9.6 s).
_PRODUCT_COLUMNS = ("parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price",
                    "categories", "details.list.element.key", "details.list.element.value")
# What typing every product reads, in a second pass once the vocabulary is learned.
SLICE_ROWS = 200_000
# Products per slice of the product knowledge's passes (facts, types): reading one slice's mentions holds about
# 100 KB per product at its peak (measured on the generated 100k catalog, 58 mentions a product: one slice of
# 100k peaked at 10.1 GB, slices of 25k at 3.5 GB in the same time).
KNOWLEDGE_SLICE_ROWS = 25_000


def _slices(path: Path, columns: tuple[str, ...], rows: int | None = None) -> Iterator[pl.DataFrame]:
    """A parquet file's `columns` in consecutive frames of `rows` rows (default `SLICE_ROWS`), in file order.

    Raises:
        SnapshotError: the file cannot be read (names it).
    """
    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=rows or SLICE_ROWS, columns=list(columns)):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            yield frame
    except (OSError, pa.ArrowException) as exc:
        raise SnapshotError(f"{path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None


def _concat(frames: list[pl.DataFrame], schema: dict[str, Any] | None) -> pl.DataFrame:
    """The slices' frames end to end; an empty frame of `schema` when there is none (a snapshot without reviews)."""
    if frames:
        return pl.concat(frames)
    if schema is None:
        raise ValueError("no slice to concatenate and no schema for an empty frame")
    return pl.DataFrame(schema=schema)


# Products from which the suite runs in a process of its own, beside the vocabulary and the normalisation.
# Measured on generated snapshots (2 cores, quiet): 1M, the whole statistics 8.3 s inline, 11.7 s beside;
# 3.7M, 24.0 s inline, 18.8 s beside.
PARALLEL_SUITE_PRODUCTS = 2_000_000

# What the catalog suite reads (`validation.expectations.catalog_table`): scalars, and list columns for their lengths.
_SUITE_COLUMNS = ("parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price",
                  "categories", "details.list.element.key")


# Products per slice the suite validates: GX's fixed cost per validation (~0.3 s) against a pandas frame's size
# (~100 MB at 500,000 rows of the suite's columns).
SUITE_SLICE_ROWS = 500_000


def snapshot_catalog_suite(snapshot: Path, rows: int | None = None) -> tuple[dict[str, Any], float]:
    """The catalog suite's result over a snapshot, validated slice by slice; and the seconds it took.

    Args:
        snapshot: the snapshot directory.
        rows: products per slice (default `SUITE_SLICE_ROWS`); the result is the same for any value.

    Raises:
        SnapshotError: products.parquet cannot be read.
    """
    start = time.perf_counter()
    path = Path(snapshot) / "products.parquet"
    suite = catalog_suite_in_parts(lambda: _slices(path, _SUITE_COLUMNS, rows or SUITE_SLICE_ROWS))
    return suite, time.perf_counter() - start


def _start_suite(snapshot: Path) -> tuple[Any, Any] | None:
    # (executor, future) of the suite in a spawned process; None where no child process can start (a daemonic
    # process, a sandbox): then it runs inline.

    try:
        executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        return executor, executor.submit(snapshot_catalog_suite, snapshot)
    except (OSError, AssertionError, RuntimeError):
        return None


def _finish_suite(snapshot: Path, job: tuple[Any, Any] | None) -> tuple[dict[str, Any], float]:

    if job is not None:
        executor, future = job
        try:
            return future.result()
        except BrokenProcessPool:
            pass  # the child died (killed, out of memory): the suite runs here instead
        finally:
            executor.shutdown(wait=True)
    return snapshot_catalog_suite(snapshot)


def write_catalog_stats(snapshot: Path, table: FieldTable, *, with_suite: bool = True) -> dict[str, Any]:
    """Compute the snapshot's statistics and write them to `<snapshot>/stats/`.

    Args:
        snapshot: a catalog snapshot directory (`ecombench ingest`'s output).
        table: the field table the snapshot was ingested with.
        with_suite: also run the great-expectations catalog suite (imports GX: 6-12 s).

    Returns:
        The `stats.json` record (fingerprint, digest, files, seconds per part).

    Raises:
        SnapshotError: the snapshot is missing or unreadable.
        OSError: the directory cannot be written (nothing half-written is left).
    """
    check_snapshot(snapshot)
    manifest = json.loads((snapshot / "manifest.json").read_text(encoding="utf-8"))
    seconds: dict[str, float] = {"normalisation": 0.0, "vocabulary": 0.0}
    # On a big snapshot the suite (great-expectations' import and pandas work, one core) runs in a process of its
    # own meanwhile; a spawned process costs ~5 s more, so small ones run it here (`PARALLEL_SUITE_PRODUCTS`).
    parallel = with_suite and manifest.get("counts", {}).get("products", 0) >= PARALLEL_SUITE_PRODUCTS
    suite_job = _start_suite(snapshot) if parallel else None
    tmp = snapshot / f".{STATS_DIR}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.mkdir(tmp)
    try:
        start = time.perf_counter()
        # The facts written to the statistics folder slice by slice as they are read, not held in memory.
        knowledge = snapshot_knowledge(snapshot, table, facts_file=tmp / "facts.parquet")
        seconds["product_knowledge"] = time.perf_counter() - start
        # Each slice's stated rows read from the facts file (`stated_rows` of the rows in the slice).
        stated = stated_rows(knowledge.facts.scan())
        fields = negative_fields(table)
        vocabulary_counts = VocabularyCounts(table, fields)
        titles: list[pl.DataFrame] = []
        pairs: list[pl.DataFrame] = []
        offset = 0
        # Products in slices of whole row groups: only one slice's details are in memory at a time.
        for products in _slices(snapshot / "products.parquet", _PRODUCT_COLUMNS):
            start = time.perf_counter()
            details = (stated.filter(pl.col("row").is_between(offset, offset + products.height - 1)).collect()
                       .with_columns(pl.col("row") - offset))
            offset += products.height
            titles.append(owned_strings(products.select(pl.col("title").fill_null("").unique())))
            pairs.append(owned_strings(details.select("key", "value").unique()))
            seconds["normalisation"] += time.perf_counter() - start
            start = time.perf_counter()
            if fields:
                vocabulary_counts.add(products, details)
            seconds["vocabulary"] += time.perf_counter() - start
            del details, products
        start = time.perf_counter()
        reviews_path = snapshot / "reviews.parquet"
        review_texts = None
        if reviews_path.is_file():
            review_texts = _concat([owned_strings(r.select("title", "text").unique())
                                    for r in _slices(reviews_path, ("title", "text"))],
                                   {"title": pl.String, "text": pl.String})
        norms = CatalogNorms(title_norms(_concat(titles, {"title": pl.String}).to_series()),
                             option_norms(_concat(pairs, {"key": pl.String, "value": pl.String}), table),
                             None if review_texts is None else review_text_norms(review_texts))
        del titles, pairs, review_texts
        seconds["normalisation"] += time.perf_counter() - start
        start = time.perf_counter()
        vocabulary = vocabulary_counts.vocabulary() if fields else {}
        seconds["vocabulary"] += time.perf_counter() - start
        suite = None
        if with_suite:
            suite, seconds["catalog_suite"] = _finish_suite(snapshot, suite_job)
        norms.titles.write_parquet(tmp / "title_norms.parquet")
        norms.options.write_parquet(tmp / "option_norms.parquet")
        if norms.review_texts is not None:
            norms.review_texts.write_parquet(tmp / "review_text_norms.parquet")
        write_knowledge(knowledge, tmp)
        (tmp / "vocabulary.json").write_text(json.dumps({"fields": fields, "vocabulary": vocabulary},
                                                        ensure_ascii=False, sort_keys=True), encoding="utf-8")
        if suite is not None:
            (tmp / "catalog_suite.json").write_text(json.dumps(suite, ensure_ascii=False, sort_keys=True),
                                                    encoding="utf-8")
        record = {"fingerprint": manifest["fingerprint"], "digest": stats_digest(table),
                  "files": sorted(p.name for p in tmp.iterdir()),
                  "seconds": {k: round(v, 3) for k, v in seconds.items()}}
        (tmp / "stats.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        final = snapshot / STATS_DIR
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return record


def copy_base_vocabulary(source: Path, snapshot: Path) -> dict[str, Any]:
    """Copy the fact vocabulary, the product-type evidence and the per-type statistics of `source` into `snapshot`.

    Into BASE_VOCABULARY_DIR: the snapshot's pages are read with the vocabulary beneath its own, its product types
    learned from its evidence pooled with the base's (`ecombench.catalog.type_vocabulary.TypeEvidence.vocabulary`)
    and its per-type statistics pooled with the base's (`ecombench.catalog.type_stats.pooled_type_stats`).

    Returns:
        What `base_vocabulary.json` records: the source's path and fingerprint and the vocabulary's sha256.

    Raises:
        SnapshotError: `source` is no snapshot, or its statistics hold no fact vocabulary (`ecombench stats
            --catalog SOURCE` writes them).
    """
    check_snapshot(source)
    stats = Path(source) / STATS_DIR
    files = BASE_FILES
    if not all((stats / f).is_file() for f in files):
        raise SnapshotError(f"{source}: no stored fact vocabulary and type statistics in {stats}; run "
                            f"`ecombench stats --catalog {source}` first")
    out = Path(snapshot) / BASE_VOCABULARY_DIR
    out.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    for f in files:
        shutil.copyfile(stats / f, out / f)
        h.update((out / f).read_bytes())
    record = {"from": str(Path(source).resolve()), "fingerprint": load_manifest(source)["fingerprint"],
              "sha256": h.hexdigest()}
    (out / "base_vocabulary.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def base_vocabulary(snapshot: Path) -> tuple[FactVocabulary | None, str]:
    """The base fact vocabulary copied into a snapshot at ingest, with its sha256; (None, "") when it has none.

    Raises:
        SnapshotError: the copy is unreadable.
    """
    folder = Path(snapshot) / BASE_VOCABULARY_DIR
    if not folder.is_dir():
        return None, ""
    try:
        record = json.loads((folder / "base_vocabulary.json").read_text(encoding="utf-8"))
        return read_vocabulary(folder), str(record["sha256"])
    except (OSError, ValueError, KeyError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{folder}: unreadable base vocabulary ({exc})") from exc


def base_type_stats(snapshot: Path) -> TypeStats | None:
    """The base per-type statistics copied into a snapshot at ingest; None when it has none.

    Raises:
        SnapshotError: the copy is unreadable.
    """
    folder = Path(snapshot) / BASE_VOCABULARY_DIR
    if not (folder / "type_fields.parquet").is_file():
        return None
    try:
        catalog = json.loads((folder / "type_stats.json").read_text(encoding="utf-8"))
        return TypeStats(fields=pl.read_parquet(folder / "type_fields.parquet"),
                         values=pl.read_parquet(folder / "type_values.parquet"), rules=TypeRules(),
                         catalog_products=int(catalog["catalog_products"]))
    except (OSError, ValueError, KeyError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{folder}: unreadable base type statistics ({exc})") from exc


def base_type_evidence(snapshot: Path) -> pl.DataFrame | None:
    """The base product-type evidence copied into a snapshot at ingest; None when it has none.

    Raises:
        SnapshotError: the copy is unreadable.
    """
    path = Path(snapshot) / BASE_VOCABULARY_DIR / "type_evidence.parquet"
    if not path.is_file():
        return None
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{path}: unreadable base type evidence ({exc})") from exc


def snapshot_knowledge(snapshot: Path, table: FieldTable, facts_file: Path | None = None) -> ProductKnowledge:
    """The product knowledge of a snapshot, learned from products.parquet in slices (`learn_product_knowledge`).

    The facts are read with the snapshot's base vocabulary beneath its own, and the product-type evidence and the
    per-type statistics pooled with the base's, when it has them (`base_vocabulary`, `base_type_evidence`,
    `base_type_stats`). With `facts_file` the facts are written there slice by slice, not held in memory.

    Raises:
        SnapshotError: products.parquet or the base vocabulary cannot be read.
    """
    return learn_product_knowledge(lambda columns: _slices(Path(snapshot) / "products.parquet", columns,
                                                           KNOWLEDGE_SLICE_ROWS), table,
                                   base=base_vocabulary(snapshot)[0], base_stats=base_type_stats(snapshot),
                                   base_evidence=base_type_evidence(snapshot), facts_file=facts_file)


def snapshot_facts(snapshot: Path, table: FieldTable) -> CatalogFacts:
    """The product facts of a snapshot (`ecombench.catalog.facts.facts_in_slices` over products.parquet).

    Raises:
        SnapshotError: products.parquet or the base vocabulary cannot be read.
    """
    return facts_in_slices(lambda columns: _slices(Path(snapshot) / "products.parquet", columns,
                                                   KNOWLEDGE_SLICE_ROWS), table,
                           base_vocabulary(snapshot)[0])


def catalog_knowledge(snapshot: Path, table: FieldTable, cache_dir: Path | None = None) -> ProductKnowledge:
    """The snapshot's product knowledge: stored at ingest when current, else from `cache_dir`, else learned now.

    Knowledge learned now is kept in `cache_dir` for the next reader (its `folder` says where).

    Args:
        snapshot: the snapshot directory.
        table: the field table in use.
        cache_dir: a cache folder (<artifacts>/cache/knowledge); None learns it without keeping it.

    Raises:
        SnapshotError: the snapshot is missing or unreadable.
    """
    fingerprint = load_manifest(snapshot)["fingerprint"]
    stats = load_catalog_stats(snapshot, fingerprint, table, with_norms=False)
    if stats is not None and stats.knowledge is not None:
        return stats.knowledge
    base = base_vocabulary(snapshot)[1]
    folder = None if cache_dir is None else cache_dir / "-".join(
        p for p in (fingerprint[:16], stats_digest(table)[:16], base[:16]) if p)
    if folder is not None:
        try:
            return read_knowledge(folder)
        except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError):
            pass
    knowledge = snapshot_knowledge(snapshot, table)
    if folder is None:
        return knowledge
    write_knowledge(knowledge, folder)
    return dataclasses.replace(knowledge, folder=folder)


def load_catalog_stats(snapshot: Path, fingerprint: str, table: FieldTable,
                       with_norms: bool = True) -> CatalogStats | None:
    """The statistics stored for the snapshot, or None when absent, unreadable or made for other bytes or code.

    Args:
        snapshot: the snapshot directory.
        fingerprint: the snapshot manifest's fingerprint (the statistics must carry the same).
        table: the field table in use (part of the digest they must carry).
        with_norms: also read the normalised text (catalog-sized: a build without a whole-catalog index,
            answer_sets "partitioned", leaves it unread and gets `norms` None).
    """
    where = snapshot / STATS_DIR
    try:
        record = json.loads((where / "stats.json").read_text(encoding="utf-8"))
        if record.get("fingerprint") != fingerprint or record.get("digest") != stats_digest(table):
            return None
        review_file = where / "review_text_norms.parquet"
        norms = CatalogNorms(pl.read_parquet(where / "title_norms.parquet"),
                             pl.read_parquet(where / "option_norms.parquet"),
                             pl.read_parquet(review_file) if review_file.is_file() else None) if with_norms else None
        vocab = json.loads((where / "vocabulary.json").read_text(encoding="utf-8"))
        knowledge = read_knowledge(where)
        suite_file = where / "catalog_suite.json"
        suite = json.loads(suite_file.read_text(encoding="utf-8")) if suite_file.is_file() else None
    except (OSError, ValueError, KeyError, pl.exceptions.PolarsError):
        return None
    return CatalogStats(norms=norms, vocabulary=vocab["vocabulary"], vocabulary_fields=vocab["fields"],
                        catalog_suite=suite, knowledge=knowledge)


def stored_catalog_suite(snapshot: Path) -> dict[str, Any] | None:
    """The catalog suite's summary stored at ingest for the snapshot as it is now, or None."""
    try:
        fingerprint = json.loads((snapshot / "manifest.json").read_text(encoding="utf-8"))["fingerprint"]
        where = snapshot / STATS_DIR
        record = json.loads((where / "stats.json").read_text(encoding="utf-8"))
        if record.get("fingerprint") != fingerprint or record.get("digest") != stats_digest(load_field_table()):
            return None
        return json.loads((where / "catalog_suite.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, SnapshotError):
        return None
