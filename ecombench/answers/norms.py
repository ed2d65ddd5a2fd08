"""The normalised text of a catalog that answer sets read: titles, detail options, review texts.

Depends only on the snapshot and the text rules, so `ecombench ingest` computes it once and stores it beside
the snapshot (ecombench.validation.catalog_stats, whose digest covers this file but not the answer-set engine that
reads it: ecombench.answers.index).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ecombench.catalog.details import detail_rows, split_options
from ecombench.catalog.reviews import normalized_review_text
from ecombench.tables.fields import FieldTable
from ecombench.text import normalize


def title_norms(titles: pl.Series) -> pl.DataFrame:
    """Each distinct title with its normalised text padded with spaces (text.normalize): (title, title_norm)."""
    uniq = titles.fill_null("").unique(maintain_order=False).sort()
    return pl.DataFrame({"title": uniq, "title_norm": [f" {normalize(t)} " for t in uniq.to_list()]},
                        schema={"title": pl.String, "title_norm": pl.String})


def option_norms(details: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Each distinct (key, value) of `detail_rows` split into options, normalised, padded: (key, value, option_norm)."""
    pairs = details.select("key", "value").unique().sort("key", "value")
    rows = [(k, v, f" {normalize(opt)} ") for k, v in pairs.iter_rows()
            for opt in split_options(table.fields[k], v or "")]
    return pl.DataFrame(rows, schema={"key": pl.String, "value": pl.String, "option_norm": pl.String}, orient="row")


def fact_option_norms(stated: pl.DataFrame) -> pl.DataFrame:
    """Each distinct (key, value) of stated facts (field as key), normalised and padded: (key, value, option_norm)."""
    pairs = stated.select("key", "value").unique().sort("key", "value")
    return pairs.with_columns(pl.Series("option_norm", [f" {normalize(v)} " for v in pairs.get_column("value")],
                                        dtype=pl.String))


def review_text_norms(reviews: pl.DataFrame) -> pl.DataFrame:
    """Each distinct (title, text) of reviews with `stages.reviews.normalized_review_text`: (title, text, text_norm)."""
    texts = reviews.select("title", "text").unique().sort("title", "text", nulls_last=True)
    return texts.with_columns(pl.Series("text_norm", [normalized_review_text(r) for r in texts.iter_rows(named=True)],
                                        dtype=pl.String))


@dataclass(frozen=True)
class CatalogNorms:
    """The normalised text of a catalog that the index (and so the checkers' answer sets) reads.

    Depends only on the snapshot and the text rules, so ingest computes it once (`ecombench.validation.catalog_stats`).

    Attributes:
        titles: `title_norms` of the products' titles.
        options: `option_norms` of the products' field-table details.
        review_texts: `review_text_norms` of the reviews, or None without reviews.
    """

    titles: pl.DataFrame
    options: pl.DataFrame
    review_texts: pl.DataFrame | None = None

    @classmethod
    def compute(cls, products: pl.DataFrame, table: FieldTable, reviews: pl.DataFrame | None = None,
                details: pl.DataFrame | None = None) -> CatalogNorms:
        """Normalise every distinct title, detail value and review text of a snapshot once."""
        details = detail_rows(products, table) if details is None else details
        return cls(title_norms(products.get_column("title")), option_norms(details, table),
                   None if reviews is None else review_text_norms(reviews))
