"""Answer sets: every catalog product that passes all of a task's code-checkable rubrics.

The catalog is indexed once per build: normalised titles and detail options (polars frames) and
token postings. A task's answer set is narrowed through the postings and graded by the rubric
checkers on the few products left, or computed with vectorised polars filters when no rubric
narrows — never a Python loop over the catalog (reference §15.20 never searched for other
matching products).
The filters follow the same rules as validation/checkers.py: tokens of stages.text, whole-token
containment, bounds as stated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from stages.features import split_options
from stages.fields import FieldTable
from stages.reviews import normalized_review_text
from stages.text import keywords, normalize, tokens
from validation.checkers import check, check_budget



class Postings:
    """Token -> sorted product row numbers (int32), stored as one flat array with offsets (CSR).

    Built with polars from (token, row) pairs; a few bytes per pair instead of a Python set
    entry, so a 3.7M-product catalog's postings fit in hundreds of MB.
    """

    def __init__(self, pairs: pl.DataFrame):
        """Args: pairs: columns token (str) and row (int), unique pairs."""
        ids = pairs.select("token").unique().sort("token").with_row_index("token_id")
        coded = (pairs.join(ids, on="token").select(pl.col("token_id").cast(pl.UInt32), pl.col("row").cast(pl.Int32))
                 .sort(["token_id", "row"]))
        counts = np.bincount(coded.get_column("token_id").to_numpy(), minlength=ids.height)
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.rows = coded.get_column("row").to_numpy()
        self.positions = dict(zip(ids.get_column("token").to_list(), range(ids.height)))

    def get(self, token: str) -> np.ndarray:
        """Sorted rows holding `token` (empty when none)."""
        i = self.positions.get(token)
        if i is None:
            return _EMPTY
        return self.rows[self.offsets[i]:self.offsets[i + 1]]

    def __len__(self) -> int:
        return len(self.positions)


_EMPTY = np.zeros(0, dtype=np.int32)
_SEP = "\x1f"  # joins an option's field and token into one postings key


def _token_pairs(frame: pl.DataFrame, text: str) -> pl.DataFrame:
    """(token, row) pairs of a frame with `row` and a padded normalised `text` column (distinct pairs)."""
    tok = pl.col(text).str.strip_chars(" ").str.split(" ").alias("token")
    return frame.select("row", tok).explode("token").filter(pl.col("token") != "").unique()


def _intersect(sets: list[np.ndarray]) -> np.ndarray:
    """Intersection of sorted unique row arrays, smallest first."""
    sets = sorted(sets, key=len)
    out = sets[0]
    for other in sets[1:]:
        if not len(out):
            break
        out = np.intersect1d(out, other, assume_unique=True)
    return out


@dataclass
class CatalogIndex:
    """Pre-normalised views of a catalog for answer sets; products are addressed by row number.

    Attributes:
        products: row, parent_asin, title_norm (padded with spaces), price, average_rating, rating_number.
        options: row, opt_id — one row per distinct detail option of a product.
        option_vocab: opt_id, key (canonical), option_norm (padded) — each distinct option once.
        reviews: row (the product's), text_norm (padded), when built with reviews.
        title_postings / option_postings / review_postings: token -> rows (option keys are "<key>\\x1f<token>").
    """

    products: pl.DataFrame
    options: pl.DataFrame
    option_vocab: pl.DataFrame
    table: FieldTable
    source: pl.DataFrame = field(repr=False)  # the checker-ready columns, gathered by row on demand
    reviews: pl.DataFrame | None = None
    review_rows: pl.DataFrame | None = field(default=None, repr=False)  # reviews sorted by product row
    review_offsets: np.ndarray | None = field(default=None, repr=False)
    title_postings: Postings | None = field(default=None, repr=False)
    option_postings: Postings | None = field(default=None, repr=False)
    review_postings: Postings | None = field(default=None, repr=False)

    @classmethod
    def build(cls, products: pl.DataFrame, table: FieldTable, reviews: pl.DataFrame | None = None) -> CatalogIndex:
        """Index a products.parquet frame. Normalises each distinct title, detail value and review text once.

        Everything else is polars and numpy: no Python object per product, so a 3.7M-product
        catalog costs the normalisation of its distinct texts plus a few seconds.

        Args:
            products: frame with parent_asin, title, main_category, price, average_rating,
                rating_number and details (list of {key, raw_key, value}).
            table: the field table (which fields split into options).
            reviews: reviews.parquet frame, when review opinions are to be checked; each
                distinct review title and text is normalised once.
        """
        cols = ["parent_asin", "title", "main_category", "price", "average_rating", "rating_number", "details"]
        source = products.select(cols).rechunk()  # gathering rows from a many-chunk frame costs ~100x more
        titles = products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "parent_asin",
                                 pl.col("title").fill_null(""), "price", "average_rating", "rating_number")
        uniq_titles = titles.get_column("title").unique()
        title_map = pl.DataFrame({"title": uniq_titles,
                                  "title_norm": [f" {normalize(t)} " for t in uniq_titles.to_list()]})
        prods = titles.join(title_map, on="title", how="left", maintain_order="left").select(
            "row", "parent_asin", "title_norm", "price", "average_rating", "rating_number")
        known = [f.name for f in table.detail_fields()]
        details = (
            products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "details").explode("details")
            .drop_nulls("details").unnest("details").filter(pl.col("key").is_in(known)).select("row", "key", "value")
        )
        pairs = details.select("key", "value").unique()
        rows = [(k, v, f" {normalize(opt)} ") for k, v in pairs.iter_rows()
                for opt in split_options(table.fields[k], v or "")]
        opt_map = pl.DataFrame(rows, schema={"key": pl.String, "value": pl.String, "option_norm": pl.String},
                               orient="row")
        vocab = (opt_map.select("key", "option_norm").unique().sort("key", "option_norm")
                 .with_row_index("opt_id").with_columns(pl.col("opt_id").cast(pl.Int32)))
        opt_ids = opt_map.join(vocab, on=["key", "option_norm"]).select("key", "value", "opt_id")
        options = details.join(opt_ids, on=["key", "value"]).select("row", "opt_id").unique()
        index = cls(products=prods, options=options, option_vocab=vocab, table=table, source=source)
        index.title_postings = Postings(_token_pairs(prods, "title_norm"))
        tok = (vocab.select("opt_id", "key", pl.col("option_norm").str.strip_chars(" ").str.split(" ").alias("t"))
               .explode("t").filter(pl.col("t") != "")
               .select("opt_id", (pl.col("key") + _SEP + pl.col("t")).alias("token")).unique())
        index.option_postings = Postings(options.join(tok, on="opt_id").select("token", "row").unique())
        if reviews is not None:
            index._index_reviews(reviews)
        return index

    def _index_reviews(self, reviews: pl.DataFrame) -> None:
        """Review texts (normalised once per distinct title+text), their postings and the rows checkers read."""
        rows = self.products.select("parent_asin", "row")
        rev = (reviews.select("review_id", "parent_asin", "rating", "title", "text")
               .join(rows, on="parent_asin", how="inner", maintain_order="left"))
        texts = rev.select("title", "text").unique()
        texts = texts.with_columns(pl.Series("text_norm", [normalized_review_text(r) for r in texts.iter_rows(named=True)],
                                             dtype=pl.String))
        normed = rev.join(texts, on=["title", "text"], how="left", maintain_order="left", nulls_equal=True)
        self.reviews = normed.select("row", "text_norm")
        self.review_postings = Postings(_token_pairs(self.reviews, "text_norm"))
        # Checkers get each product's reviews in file order (as reviews.parquet lists them).
        self.review_rows = rev.with_row_index("_order").sort("row", "_order").drop("_order").rechunk()
        counts = np.bincount(self.review_rows.get_column("row").to_numpy(), minlength=self.products.height)
        self.review_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def rows(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Checker-ready product dicts of the given rows (with "reviews" when the index has them)."""
        out = self.source[rows].to_dicts()
        if self.review_rows is not None:
            lo, hi = self.review_offsets[rows], self.review_offsets[rows + 1]
            picked = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)]) if len(rows) else _EMPTY
            reviews = self.review_rows[picked].select("review_id", "parent_asin", "rating", "title", "text").to_dicts()
            start = 0
            for product, n in zip(out, (hi - lo).tolist()):
                product["reviews"] = reviews[start:start + n]
                start += n
        return out

    def _narrow(self, rubric: dict[str, Any]) -> np.ndarray | None:
        """Sorted rows holding every token of the rubric's value where the rubric looks, or None (no narrowing)."""
        if rubric["type"] == "attribute_match":
            key = rubric["field"].removeprefix("details.")
            sets = [self.option_postings.get(key + _SEP + t) for t in tokens(rubric["expected_value"])]
        elif rubric["type"] == "entity_match":
            sets = [self.title_postings.get(t) for t in keywords(rubric["expected_value"])]
        elif rubric["type"] == "review_opinion" and self.review_postings is not None:
            sets = [self.review_postings.get(t) for t in tokens(rubric["expected_value"])]
        else:
            return None
        if not sets:
            return None
        return _intersect(sets)

    def answer_set(self, rubrics: list[dict[str, Any]]) -> list[str]:
        """Sorted parent_asins of all products satisfying every rubric (see `answer_set_vectorised`).

        When a rubric's value can narrow the catalog through the token postings (attributes,
        product type, review opinions), the few products left are graded by the rubric checkers
        themselves (validation.checkers.check); otherwise the vectorised polars filters run.
        Both give the same set (tests compare them, and both with a brute-force checker loop).

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        if self.reviews is None and any(r["type"] == "review_opinion" for r in rubrics):
            raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
        found = [f for f in (self._narrow(r) for r in rubrics) if f is not None]
        if not found:
            return self.answer_set_vectorised(rubrics)
        narrowed = _intersect(found)
        return sorted(p["parent_asin"] for p in self.rows(narrowed)
                      if all(check(r, p, self.table).satisfied for r in rubrics))

    def answer_set_vectorised(self, rubrics: list[dict[str, Any]]) -> list[str]:
        """Sorted parent_asins of all products satisfying every code-checkable rubric.

        numeric_range, entity_match, attribute_match, negative_attribute and review_opinion are
        vectorised filters; budget_match runs its checker's voucher arithmetic on the few
        products left after the others. review_opinion needs the index built with reviews.

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        frame = self.products.lazy()
        budgets = []
        for r in rubrics:
            if r["type"] == "numeric_range":
                frame = frame.filter(_bound_expr(pl.col(r["field"]), r["expected_value"]))
            elif r["type"] == "entity_match":
                for word in sorted(keywords(r["expected_value"])):
                    frame = frame.filter(pl.col("title_norm").str.contains(f" {word} ", literal=True))
            elif r["type"] == "attribute_match":
                key = r["field"].removeprefix("details.")
                needle = f" {normalize(r['expected_value'])} "
                frame = frame.join(self._rows_with_option(key, pl.col("option_norm").str.contains(needle, literal=True)),
                                   on="row", how="semi")
            elif r["type"] == "negative_attribute":
                key = r["field"].removeprefix("details.")
                needles = [f" {normalize(s)} " for v in r["expected_value"] for s in self.table.spellings(v)]
                hit = pl.lit(False)
                for needle in needles:
                    hit = hit | pl.col("option_norm").str.contains(needle, literal=True)
                frame = (frame.join(self._rows_with_option(key, pl.lit(True)), on="row", how="semi")
                         .join(self._rows_with_option(key, hit), on="row", how="anti"))
            elif r["type"] == "review_opinion":
                if self.reviews is None:
                    raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
                needle = f" {normalize(r['expected_value'])} "
                hits = (self.reviews.lazy().filter(pl.col("text_norm").str.contains(needle, literal=True))
                        .select("row").unique())
                frame = frame.join(hits, on="row", how="semi")
            elif r["type"] == "budget_match":
                budgets.append(r)
        left = frame.select("parent_asin", "price").collect()
        ids = []
        for asin, price in left.iter_rows():
            if all(check_budget(r, {"price": price}, self.table).satisfied for r in budgets):
                ids.append(asin)
        return sorted(ids)


    def _rows_with_option(self, key: str, condition: pl.Expr) -> pl.LazyFrame:
        """Rows having an option of field `key` that meets `condition` (over option_norm)."""
        ids = self.option_vocab.lazy().filter((pl.col("key") == key) & condition).select("opt_id")
        return self.options.lazy().join(ids, on="opt_id", how="semi").select("row").unique()


def _bound_expr(col: pl.Expr, bound: dict[str, Any]) -> pl.Expr:
    expr = col.is_not_null()
    if bound.get("min") is not None:
        expr &= (col >= bound["min"]) if bound.get("min_inclusive", True) else (col > bound["min"])
    if bound.get("max") is not None:
        expr &= (col <= bound["max"]) if bound.get("max_inclusive", True) else (col < bound["max"])
    return expr
