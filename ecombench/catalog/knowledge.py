"""What the pipeline knows of a catalog's products: their facts, their types, and what matters for each type.

One pass over a snapshot, in slices, learns it all from the snapshot itself (so a new category brings its own
vocabulary): the product-type vocabulary and every product's type (ecombench.catalog.type_vocabulary,
ecombench.catalog.product_type), the product facts (ecombench.catalog.facts), and the per-type statistics over
them (ecombench.catalog.type_stats). `ecombench ingest` stores it beside the snapshot; a build reads it there, or
learns it once and keeps it in its cache.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ecombench.catalog.details import owned_strings
from ecombench.catalog.facts import (
    FACT_COLUMNS,
    CatalogFacts,
    FactVocabulary,
    ProductSlices,
    facts_in_slices,
    read_vocabulary,
    write_vocabulary,
)
from ecombench.catalog.product_type import product_types
from ecombench.catalog.type_stats import TypeRules, TypeStats, TypeStatSums, pooled_type_stats
from ecombench.catalog.type_vocabulary import TypeEvidence, TypeVocabulary, load_type_override
from ecombench.io import atomic_path, write_atomic
from ecombench.tables.fields import FieldTable

# What the type vocabulary and each product's type read of products.parquet.
TYPE_COLUMNS = ("parent_asin", "title", "store", "categories", "details")
KNOWLEDGE_COLUMNS = tuple(dict.fromkeys((*FACT_COLUMNS, *TYPE_COLUMNS)))
KNOWLEDGE_FILES = ("facts.parquet", "fact_vocabulary.parquet", "fact_vocabulary.json", "type_vocabulary.json",
                   "type_evidence.parquet", "product_types.parquet", "type_fields.parquet", "type_values.parquet",
                   "type_rules.json", "type_stats.json")


@dataclass(frozen=True)
class ProductKnowledge:
    """A catalog's product facts, product types and per-type statistics.

    Attributes:
        facts: the facts and the vocabulary they were read with.
        type_vocabulary: the words that name product types, learned from the catalog with the reviewed override.
        type_evidence: per word, the counts the type vocabulary was decided on and why.
        product_types: (parent_asin, product_type, type_head) of every product.
        type_stats: per type and field, coverage, values and division of the facts.
        folder: where the knowledge is stored (`write_knowledge`), None while only in memory.
    """

    facts: CatalogFacts
    type_vocabulary: TypeVocabulary
    type_evidence: pl.DataFrame
    product_types: pl.DataFrame
    type_stats: TypeStats
    folder: Path | None = None

    def type_of(self, parent_asin: str) -> str | None:
        """The product type of one product, or None."""
        hit = self.product_types.filter(pl.col("parent_asin") == parent_asin)
        return hit.get_column("product_type")[0] if hit.height else None


def learn_product_knowledge(slices: ProductSlices, table: FieldTable,
                            rules: TypeRules | None = None, base: FactVocabulary | None = None,
                            base_stats: TypeStats | None = None,
                            base_evidence: pl.DataFrame | None = None,
                            facts_file: Path | None = None) -> ProductKnowledge:
    """Learn a catalog's product knowledge from its products, given in consecutive slices.

    Args:
        slices: the catalog's products in consecutive frames (`ecombench.catalog.facts.ProductSlices`; the passes
            ask for TYPE_COLUMNS and those of `facts_in_slices`).
        table: the field table.
        rules: the per-type thresholds; None takes the defaults.
        base: another catalog's fact vocabulary, read beneath this one's (`ecombench.catalog.facts.with_base`).
        base_stats: another catalog's per-type statistics, pooled with this one's
            (`ecombench.catalog.type_stats.pooled_type_stats`).
        base_evidence: another catalog's product-type evidence, pooled with this one's
            (`ecombench.catalog.type_vocabulary.TypeEvidence.vocabulary`).
        facts_file: where to write the facts as they are read, slice by slice (`facts_in_slices`'s `file`; then
            they are not held in memory); None holds them in memory.
    """
    evidence = TypeEvidence()
    for frame in slices(TYPE_COLUMNS):
        evidence.add(frame)
    type_vocabulary, type_evidence = evidence.vocabulary(load_type_override(), base_evidence)
    not_entities = sorted(table.fields["title"].placeholders)
    # Each slice's types copied out of it (`owned_strings`): a view would pin the slice's whole text.
    typed = pl.concat([owned_strings(product_types(frame, type_vocabulary, not_entities))
                       for frame in slices(TYPE_COLUMNS)])
    # The per-type statistics counted slice by slice as the facts are read (`TypeStatSums`), not over all at once.
    sums = TypeStatSums(typed.select("parent_asin", "product_type"), table.settled_by())
    facts = facts_in_slices(slices, table, base, each=sums.add, file=facts_file)
    stats = sums.stats(rules)
    if base_stats is not None:
        stats = pooled_type_stats(stats, base_stats)
    return ProductKnowledge(facts=facts, type_vocabulary=type_vocabulary, type_evidence=type_evidence,
                            product_types=typed, type_stats=stats)


def frame_knowledge(products: pl.DataFrame, table: FieldTable) -> ProductKnowledge:
    """`learn_product_knowledge` of one products frame (tests, small catalogs)."""
    return learn_product_knowledge(lambda columns: iter([products]), table)


def write_knowledge(knowledge: ProductKnowledge, folder: Path) -> list[str]:
    """Store `knowledge` in `folder` (KNOWLEDGE_FILES, each written whole). Returns the file names.

    Facts already written to `folder`/facts.parquet as they were read (`learn_product_knowledge`'s `facts_file`)
    stay as they are; facts written elsewhere are copied.

    Raises:
        OSError: the folder cannot be written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stored = knowledge.facts.file
    if stored is None or not (folder / "facts.parquet").exists() or not stored.samefile(folder / "facts.parquet"):
        with atomic_path(folder / "facts.parquet") as tmp:
            if knowledge.facts.frame is not None:
                knowledge.facts.frame.write_parquet(tmp)
            else:
                shutil.copyfile(knowledge.facts.file, tmp)  # type: ignore[arg-type]
    write_vocabulary(knowledge.facts.vocabulary, folder)
    write_atomic(folder / "type_vocabulary.json",
                 json.dumps({**knowledge.type_vocabulary.to_json(), "digest": knowledge.type_vocabulary.digest},
                            ensure_ascii=False, sort_keys=True))
    for name, frame in (("type_evidence", knowledge.type_evidence), ("product_types", knowledge.product_types),
                        ("type_fields", knowledge.type_stats.fields), ("type_values", knowledge.type_stats.values)):
        with atomic_path(folder / f"{name}.parquet") as tmp:
            frame.write_parquet(tmp)
    rules = knowledge.type_stats.rules
    write_atomic(folder / "type_rules.json", json.dumps(rules.__dict__, sort_keys=True))
    write_atomic(folder / "type_stats.json", json.dumps({"catalog_products": knowledge.type_stats.catalog_products}))
    return list(KNOWLEDGE_FILES)


def read_knowledge(folder: Path) -> ProductKnowledge:
    """The knowledge `write_knowledge` stored in `folder`.

    Raises:
        OSError, ValueError, KeyError, polars.exceptions.PolarsError: a file is missing or malformed.
    """
    type_json = json.loads((folder / "type_vocabulary.json").read_text(encoding="utf-8"))
    stats = TypeStats(fields=pl.read_parquet(folder / "type_fields.parquet"),
                      values=pl.read_parquet(folder / "type_values.parquet"),
                      rules=TypeRules(**json.loads((folder / "type_rules.json").read_text(encoding="utf-8"))),
                      catalog_products=int(json.loads((folder / "type_stats.json").read_text(encoding="utf-8"))
                                           ["catalog_products"]))
    return ProductKnowledge(facts=CatalogFacts(pl.read_parquet(folder / "facts.parquet"), read_vocabulary(folder)),
                            type_vocabulary=TypeVocabulary.from_json(type_json),
                            type_evidence=pl.read_parquet(folder / "type_evidence.parquet"),
                            product_types=pl.read_parquet(folder / "product_types.parquet"), type_stats=stats,
                            folder=folder)
