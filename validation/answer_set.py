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

import polars as pl

from stages.features import split_options
from stages.fields import FieldTable
from stages.hashing import canonical_json
from stages.reviews import normalized_review_text
from stages.text import keywords, normalize, tokens
from validation.checkers import check, check_budget



@dataclass
class CatalogIndex:
    """Pre-normalised views of a catalog for answer sets.

    Attributes:
        products: parent_asin, title_norm (padded with spaces), price, average_rating, rating_number.
        options: parent_asin, key (canonical), option_norm (padded) — one row per detail option.
    """

    products: pl.DataFrame
    options: pl.DataFrame
    table: FieldTable
    reviews: pl.DataFrame | None = None
    rows: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    option_postings: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict, repr=False)
    title_postings: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    review_postings: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    support_cache: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, products: pl.DataFrame, table: FieldTable, reviews: pl.DataFrame | None = None) -> CatalogIndex:
        """Index a products.parquet frame. Normalises each distinct title and detail value once.

        Args:
            products: frame with parent_asin, title, price, average_rating, rating_number and
                details (list of {key, raw_key, value}).
            table: the field table (which fields split into options).
            reviews: reviews.parquet frame, when review opinions are to be checked; each
                review's title and text are normalised once.
        """
        titles = products.select("parent_asin", "title", "price", "average_rating", "rating_number")
        uniq_titles = titles.get_column("title").fill_null("").unique()
        title_map = pl.DataFrame({"title": uniq_titles,
                                  "title_norm": [f" {normalize(t)} " for t in uniq_titles.to_list()]})
        prods = titles.with_columns(pl.col("title").fill_null("")).join(title_map, on="title", how="left")
        known = [f.name for f in table.detail_fields()]
        details = (
            products.select("parent_asin", "details").explode("details").drop_nulls("details")
            .unnest("details").filter(pl.col("key").is_in(known)).select("parent_asin", "key", "value")
        )
        pairs = details.select("key", "value").unique()
        rows = [(k, v, f" {normalize(opt)} ") for k, v in pairs.iter_rows()
                for opt in split_options(table.fields[k], v or "")]
        opt_map = pl.DataFrame(rows, schema={"key": pl.String, "value": pl.String, "option_norm": pl.String},
                               orient="row")
        options = details.join(opt_map, on=["key", "value"], how="inner").select("parent_asin", "key", "option_norm")
        review_index = None
        if reviews is not None:
            review_index = pl.DataFrame({
                "parent_asin": reviews.get_column("parent_asin"),
                "text_norm": [normalized_review_text(r) for r in reviews.select("title", "text").iter_rows(named=True)],
            }, schema={"parent_asin": pl.String, "text_norm": pl.String})
        index = cls(products=prods.select("parent_asin", "title_norm", "price", "average_rating", "rating_number"),
                    options=options, table=table, reviews=review_index)
        index._build_postings(products, reviews)
        return index

    def _build_postings(self, products: pl.DataFrame, reviews: pl.DataFrame | None) -> None:
        """Token -> products postings (titles, detail options per field, reviews) and a checker-ready row per product.

        Postings only narrow the catalog to the products that hold every token of a value; the
        answer set is then decided by the rubric checkers themselves on those few rows, so it
        can never disagree with them.
        """
        cols = ["parent_asin", "title", "main_category", "price", "average_rating", "rating_number", "details"]
        self.rows = {r["parent_asin"]: r for r in products.select(cols).to_dicts()}
        title_post: dict[str, set[str]] = {}
        for asin, norm in self.products.select("parent_asin", "title_norm").iter_rows():
            for tok in set(norm.split()):
                title_post.setdefault(tok, set()).add(asin)
        option_post: dict[tuple[str, str], set[str]] = {}
        for asin, key, norm in self.options.iter_rows():
            for tok in set(norm.split()):
                option_post.setdefault((key, tok), set()).add(asin)
        review_post: dict[str, set[str]] = {}
        if reviews is not None:
            for row in self.rows.values():
                row["reviews"] = []
            for r in reviews.select("review_id", "parent_asin", "rating", "title", "text").to_dicts():
                if r["parent_asin"] in self.rows:
                    self.rows[r["parent_asin"]]["reviews"].append(r)
            for asin, norm in self.reviews.iter_rows():
                for tok in set(norm.split()):
                    review_post.setdefault(tok, set()).add(asin)
        self.title_postings = {k: frozenset(v) for k, v in title_post.items()}
        self.option_postings = {k: frozenset(v) for k, v in option_post.items()}
        self.review_postings = {k: frozenset(v) for k, v in review_post.items()}

    def _narrow(self, rubric: dict[str, Any]) -> frozenset[str] | None:
        """Products holding every token of the rubric's value where the rubric looks, or None (no narrowing)."""
        if rubric["type"] == "attribute_match":
            key = rubric["field"].removeprefix("details.")
            words = tokens(rubric["expected_value"])
            sets = [self.option_postings.get((key, t), frozenset()) for t in words]
        elif rubric["type"] == "entity_match":
            sets = [self.title_postings.get(t, frozenset()) for t in keywords(rubric["expected_value"])]
        elif rubric["type"] == "review_opinion" and self.reviews is not None:
            sets = [self.review_postings.get(t, frozenset()) for t in tokens(rubric["expected_value"])]
        else:
            return None
        if not sets:
            return None
        return frozenset.intersection(*sorted(sets, key=len))

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
        narrowed = None
        for r in rubrics:
            found = self._narrow(r)
            if found is not None:
                narrowed = found if narrowed is None else narrowed & found
        if narrowed is None:
            return self.answer_set_vectorised(rubrics)
        return sorted(a for a in narrowed if all(check(r, self.rows[a], self.table).satisfied for r in rubrics))

    def support(self, rubric: dict[str, Any]) -> int:
        """How many catalog products satisfy this one rubric (its support; the smaller, the more selective).

        The count is that of `answer_set([rubric])`, so it follows the rubric checkers exactly.
        Counts are cached by the rubric's type, field and expected value (canonical JSON): one
        build asks for the same colour or price cap thousands of times. The split (stage 3)
        hides the most selective requirements and states the least selective in the query.

        Args:
            rubric: a rubric record, or just {type, field, expected_value} (stages.rubrics.feature_rubric).

        Returns:
            A product count, 0 to the catalog's size.

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        key = canonical_json([rubric["type"], rubric["field"], rubric["expected_value"]])
        count = self.support_cache.get(key)
        if count is None:
            count = self.support_cache[key] = len(self.answer_set([rubric]))
        return count

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
                hits = (self.options.lazy()
                        .filter((pl.col("key") == key) & pl.col("option_norm").str.contains(needle, literal=True))
                        .select("parent_asin").unique())
                frame = frame.join(hits, on="parent_asin", how="semi")
            elif r["type"] == "negative_attribute":
                key = r["field"].removeprefix("details.")
                has_field = self.options.lazy().filter(pl.col("key") == key).select("parent_asin").unique()
                needles = [f" {normalize(s)} " for v in r["expected_value"] for s in self.table.spellings(v)]
                hit = pl.lit(False)
                for needle in needles:
                    hit = hit | pl.col("option_norm").str.contains(needle, literal=True)
                excluded = (self.options.lazy().filter((pl.col("key") == key) & hit).select("parent_asin").unique())
                frame = frame.join(has_field, on="parent_asin", how="semi").join(excluded, on="parent_asin", how="anti")
            elif r["type"] == "review_opinion":
                if self.reviews is None:
                    raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
                needle = f" {normalize(r['expected_value'])} "
                hits = (self.reviews.lazy().filter(pl.col("text_norm").str.contains(needle, literal=True))
                        .select("parent_asin").unique())
                frame = frame.join(hits, on="parent_asin", how="semi")
            elif r["type"] == "budget_match":
                budgets.append(r)
        left = frame.select("parent_asin", "price").collect()
        ids = []
        for asin, price in left.iter_rows():
            if all(check_budget(r, {"price": price}, self.table).satisfied for r in budgets):
                ids.append(asin)
        return sorted(ids)


def _bound_expr(col: pl.Expr, bound: dict[str, Any]) -> pl.Expr:
    expr = col.is_not_null()
    if bound.get("min") is not None:
        expr &= (col >= bound["min"]) if bound.get("min_inclusive", True) else (col > bound["min"])
    if bound.get("max") is not None:
        expr &= (col <= bound["max"]) if bound.get("max_inclusive", True) else (col < bound["max"])
    return expr
