"""Answer sets: every catalog product that passes all of a task's code-checkable rubrics.

The catalog is indexed once per build: normalised titles and detail options (polars frames) and
token postings. A task's answer set is narrowed through the postings and graded by the rubric
checkers on the few products left, or computed with vectorised polars filters when no rubric
narrows — never a Python loop over the catalog (reference §15.20 never searched for other
matching products).
The filters follow the same rules as the code checkers (ecombench.rubrics): tokens of ecombench.text, whole-token
containment, bounds as stated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
import polars as pl

from ecombench.answers.filters import filter_of
from ecombench.answers.norms import CatalogNorms, fact_option_norms
from ecombench.catalog.facts import STATED, build_catalog_facts, facts_column
from ecombench.hashing import canonical_json
from ecombench.rubrics import RubricLike, as_spec, kind_of, plain_value
from ecombench.rubrics.checkers import check
from ecombench.tables.fields import FieldTable


class Postings:
    """Key number -> sorted int32 ids, stored as one flat array with offsets (CSR).

    A few bytes per (key, id) pair instead of a Python set entry, so a 3.7M-product catalog's
    postings fit in hundreds of MB. Built from integer codes with one polars sort; keys are
    numbered 0..n_keys-1 (a `positions` dict maps text keys to their numbers when there are any).
    """

    def __init__(self, key_ids: pl.Series, ids: pl.Series, n_keys: int, keys: list[str] | None = None,
                 dedupe: bool = True):
        """Index (key id, id) pairs as sorted postings.

        Args:
            key_ids: integer series, one key id per position.
            ids: integer series of the same length as `key_ids`, the id paired with each key id.
            n_keys: number of keys (key ids lie in 0..n_keys-1).
            keys: text of each key number, for `get`; None when looked up by number only.
            dedupe: drop repeated pairs.
        """
        code = (key_ids.cast(pl.UInt64) * (1 << 32) + ids.cast(pl.UInt64)).rename("code")
        code = code.unique() if dedupe else code
        codes = code.sort().to_numpy()
        self.ids = (codes & 0xFFFFFFFF).astype(np.int32)
        counts = np.bincount((codes >> 32).astype(np.int64), minlength=n_keys)
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.positions = dict(zip(keys, range(len(keys)))) if keys is not None else {}

    def of(self, number: int) -> np.ndarray:
        """Sorted ids of key `number`."""
        return self.ids[self.offsets[number]:self.offsets[number + 1]]

    def get(self, key: str) -> np.ndarray:
        """Sorted ids of text key `key` (empty when none)."""
        i = self.positions.get(key)
        return _EMPTY if i is None else self.of(i)

    def __len__(self) -> int:
        """Number of keys."""
        return len(self.offsets) - 1


_EMPTY = np.zeros(0, dtype=np.int32)
_SEP = "\x1f"  # joins an option's field and token into one postings key


def _text_tokens(frame: pl.DataFrame, id_col: str, text: str) -> pl.DataFrame:
    """(id, token) pairs of a frame with an id and a padded normalised `text` column (distinct pairs)."""
    tok = pl.col(text).str.strip_chars(" ").str.split(" ").alias("token")
    return frame.select(id_col, tok).explode("token").filter(pl.col("token") != "").unique()


def _numbered(tokens: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Token numbers: (frame token, token_id), and the token of each number."""
    ids = tokens.select("token").unique().sort("token").with_row_index("token_id")
    return ids, ids.get_column("token").to_list()


def _intersect(sets: list[np.ndarray]) -> np.ndarray:
    """Intersection of sorted unique id arrays, smallest first (binary search of the small in the large)."""
    sets = sorted(sets, key=len)
    out = sets[0]
    for other in sets[1:]:
        if not len(out):
            break
        at = np.searchsorted(other, out)
        out = out[(at < len(other)) & (other[np.minimum(at, len(other) - 1)] == out)]
    return out


class AnswerSets(Protocol):
    """The catalog-wide questions a build asks while it builds a candidate (stages 2-7).

    `CatalogIndex` answers them from an index of the whole catalog; `ecombench.pipeline.batched.BatchingCatalog`
    from partition passes over the snapshot (ecombench.answers.partitioned), with the same answers.
    """

    table: FieldTable

    def answer_set(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]],
                   limit: int | None = None) -> list[str]:
        """Sorted parent_asins of the products satisfying every rubric (`CatalogIndex.answer_set`)."""
        ...

    def support(self, rubric: RubricLike | dict[str, Any]) -> int:
        """Products satisfying this one rubric (`CatalogIndex.support`)."""
        ...

    def products_of(self, asins: Iterable[str]) -> list[dict[str, Any]]:
        """Checker-ready product dicts of these parent_asins, in row order (`CatalogIndex.products_of`)."""
        ...

    def first_products(self, n: int) -> list[str]:
        """The first `n` parent_asins in row order (`CatalogIndex.first_products`)."""
        ...

    def answer_sets_within(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                           asins: Iterable[str]) -> list[list[str]]:
        """Per rubric set, the sorted parent_asins among `asins` satisfying it (`CatalogIndex.answer_sets_within`)."""
        ...

    def supports(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]]) -> list[int]:
        """`support` of each rubric, in order, asked together (`CatalogIndex.supports`)."""
        ...

    def answer_sets(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                    limit: int | None = None) -> list[list[str]]:
        """`answer_set(rs, limit)` of each rubric set, in order, asked together (`CatalogIndex.answer_sets`)."""
        ...


@dataclass
class CatalogIndex:
    r"""Pre-normalised views of a catalog for answer sets; products are addressed by row number.

    Attributes:
        products: row, parent_asin, title_norm (padded with spaces), price, average_rating, rating_number.
        options: row, opt_id — one row per distinct detail option of a product.
        option_vocab: opt_id, key (canonical), option_norm (padded) — each distinct option once.
        title_postings / option_postings / review_postings: token -> rows (option keys are
            "<key>\x1f<token>"), each built from the tokens of distinct texts.
        reviews: row (the product's), text_norm (padded), when built with reviews.
    """

    products: pl.DataFrame
    options: pl.DataFrame
    option_vocab: pl.DataFrame
    table: FieldTable
    source: pl.DataFrame = field(repr=False)  # the checker-ready columns, gathered by row on demand
    review_rows: pl.DataFrame | None = field(default=None, repr=False)  # reviews sorted by product row
    review_offsets: np.ndarray | None = field(default=None, repr=False)
    title_postings: Postings | None = field(default=None, repr=False)
    option_postings: Postings | None = field(default=None, repr=False)
    review_postings: Postings | None = field(default=None, repr=False)
    numeric: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _review_texts: pl.DataFrame | None = field(default=None, repr=False)
    support_cache: dict[str, int] = field(default_factory=dict, repr=False)
    # (columns read, row) -> that row's checker-ready dict of those columns: see `_read_rows`
    _row_cache: dict[tuple[str, ...], dict[int, dict[str, Any]]] = field(default_factory=dict, repr=False)

    # `_read_rows` keeps at most this many product dicts per set of columns (at most some hundreds of MB).
    ROW_CACHE_ROWS: ClassVar[int] = 50_000
    # support(): rows a rubric's tokens narrow to, above which the postings' count stands for the exact one.
    SUPPORT_EXACT_ROWS: ClassVar[int] = 5000

    @classmethod
    def build(cls, products: pl.DataFrame, table: FieldTable, reviews: pl.DataFrame | None = None,
              details: pl.DataFrame | None = None, norms: CatalogNorms | None = None,
              facts: pl.DataFrame | None = None) -> CatalogIndex:
        """Index a products.parquet frame over its product facts. Normalises each distinct title and value once.

        Everything else is polars and numpy on integer codes: no Python object per product, so
        a big catalog costs the normalisation of its distinct texts plus some seconds per
        million products (benchmarks/RESULTS.md).

        Args:
            products: frame with parent_asin, title, main_category, price, average_rating,
                rating_number and details (list of {key, raw_key, value}).
            table: the field table (which fields split into options).
            reviews: reviews.parquet frame, when review opinions are to be checked; each distinct
                review title and text is normalised once.
            details: unused when `facts` is given; else `detail_rows(products, table)` if the caller has it.
            norms: the snapshot's normalised text (`CatalogNorms`, e.g. stored at ingest); None normalises here.
            facts: the products' facts (`ecombench.catalog.facts`, `row` = position in `products`); None reads them
                from the frame's own columns (`build_catalog_facts`: from its labels alone when it has no text).
        """
        if facts is None:
            facts = build_catalog_facts(products, table).facts
        cols = ["parent_asin", "title", "main_category", "price", "average_rating", "rating_number", "details"]
        source = (products.select(cols).with_row_index("_row").join(facts_column(facts), left_on="_row", right_on="row",
                                                                     how="left", maintain_order="left")
                  .drop("_row").with_columns(pl.col("facts").fill_null([])).rechunk())
        titles = products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "parent_asin",
                                 pl.col("title").fill_null(""), "price", "average_rating", "rating_number")
        if norms is None or (reviews is not None and norms.review_texts is None):
            norms = CatalogNorms.compute(products, table, reviews, details=pl.DataFrame(
                schema={"row": pl.Int32, "key": pl.String, "value": pl.String}))
        title_map = norms.titles.with_row_index("title_id")
        prods = titles.join(title_map, on="title", how="left", maintain_order="left")
        # Options: every value the products' pages state (their facts), each distinct (field, value) normalised once.
        stated = facts.filter(pl.col("polarity") == STATED).select("row", pl.col("field").alias("key"), "value")
        opt_map = fact_option_norms(stated)
        vocab = (opt_map.select("key", "option_norm").unique().sort("key", "option_norm")
                 .with_row_index("opt_id").with_columns(pl.col("opt_id").cast(pl.Int32)))
        opt_ids = opt_map.join(vocab, on=["key", "option_norm"]).select("key", "value", "opt_id")
        options = stated.join(opt_ids, on=["key", "value"]).select("row", "opt_id").unique()
        index = cls(products=prods.select("row", "parent_asin", "title_norm", "price", "average_rating",
                                          "rating_number"),
                    options=options, option_vocab=vocab, table=table, source=source)

        # Title token -> rows: tokens of each distinct title, numbered, spread to the rows holding that title.
        title_tokens = _text_tokens(title_map, "title_id", "title_norm")
        numbers, words = _numbered(title_tokens)
        by_title = title_tokens.join(numbers, on="token").select("title_id", "token_id")
        spread = prods.select("row", "title_id").join(by_title, on="title_id")
        index.title_postings = Postings(spread.get_column("token_id"), spread.get_column("row"), len(words), words,
                                        dedupe=False)  # a title's tokens are distinct, a row has one title
        # Option token ("<field>\x1f<token>") -> rows: tokens of each distinct option, spread to the rows holding it.
        opt_tokens = (_text_tokens(vocab, "opt_id", "option_norm")
                      .join(vocab.select("opt_id", "key"), on="opt_id")
                      .select("opt_id", (pl.col("key") + _SEP + pl.col("token")).alias("token")))
        numbers, words = _numbered(opt_tokens)
        by_option = opt_tokens.join(numbers, on="token").select("opt_id", "token_id")
        spread = options.join(by_option, on="opt_id")
        index.option_postings = Postings(spread.get_column("token_id"), spread.get_column("row"), len(words), words)
        index.numeric = {c: prods.get_column(c).cast(pl.Float64).fill_null(float("nan")).to_numpy()
                         for c in ("price", "average_rating", "rating_number")}
        if reviews is not None:
            rev = (reviews.select("review_id", "parent_asin", "rating", "title", "text")
                   .join(prods.select("parent_asin", "row"), on="parent_asin", how="inner", maintain_order="left"))
            # Checkers get each product's reviews in file order (as reviews.parquet lists them).
            index.review_rows = rev.with_row_index("_order").sort("row", "_order").drop("_order").rechunk()
            counts = np.bincount(index.review_rows.get_column("row").to_numpy(), minlength=prods.height)
            index.review_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            # Review token -> rows: each distinct review text normalised once, its tokens spread to the products.
            assert norms.review_texts is not None  # computed above when missing
            texts = norms.review_texts.with_row_index("text_id")
            index._review_texts = (index.review_rows.join(texts, on=["title", "text"], how="left",
                                                          maintain_order="left", nulls_equal=True)
                                   .select("row", "text_id", "text_norm"))
            text_tokens = _text_tokens(texts, "text_id", "text_norm")
            numbers, words = _numbered(text_tokens)
            by_text = text_tokens.join(numbers, on="token").select("text_id", "token_id")
            spread = index._review_texts.select("row", "text_id").join(by_text, on="text_id")
            index.review_postings = Postings(spread.get_column("token_id"), spread.get_column("row"), len(words),
                                             words)
        return index

    @property
    def reviews(self) -> pl.DataFrame | None:
        """row, text_norm of every review (None when the index was built without reviews)."""
        return None if self._review_texts is None else self._review_texts.select("row", "text_norm")

    def rows(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Checker-ready product dicts of the given rows (with "reviews" when the index has them)."""
        out = self.source[rows].to_dicts()
        if self.review_rows is not None:
            assert self.review_offsets is not None  # built together with review_rows
            lo, hi = self.review_offsets[rows], self.review_offsets[rows + 1]
            picked = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)]) if len(rows) else _EMPTY
            reviews = self.review_rows[picked].select("review_id", "parent_asin", "rating", "title", "text").to_dicts()
            start = 0
            for product, n in zip(out, (hi - lo).tolist()):
                product["reviews"] = reviews[start:start + n]
                start += n
        return out

    def products_of(self, asins: Iterable[str]) -> list[dict[str, Any]]:
        """Checker-ready product dicts (`rows`) of these parent_asins, in row order (unknown ones skipped)."""
        rows = self.products.filter(pl.col("parent_asin").is_in(list(asins))).get_column("row").to_numpy()
        return self.rows(rows)

    def first_products(self, n: int) -> list[str]:
        """The parent_asins of the first `n` products in row order (all of them when fewer)."""
        return self.products.get_column("parent_asin").head(n).to_list()

    def option_token_rows(self, key: str, token: str) -> np.ndarray:
        """Sorted rows with an option of canonical field `key` holding `token`."""
        assert self.option_postings is not None
        return self.option_postings.get(key + _SEP + token)

    def title_token_rows(self, token: str) -> np.ndarray:
        """Sorted rows whose title holds `token`."""
        assert self.title_postings is not None
        return self.title_postings.get(token)

    def review_token_rows(self, token: str) -> np.ndarray:
        """Sorted rows with a review holding `token` (empty without a review index)."""
        return _EMPTY if self.review_postings is None else self.review_postings.get(token)

    @staticmethod
    def intersect(sets: list[np.ndarray]) -> np.ndarray:
        """Intersection of sorted unique row arrays."""
        return _intersect(sets)

    def _within_bounds(self, rows: np.ndarray, rubrics: list[RubricLike]) -> np.ndarray:
        """`rows` less those a bound on a catalog column excludes (each rubric type's `within_bounds`)."""
        for r in rubrics:
            rows = filter_of(r).within_bounds(self, rows, r)
        return rows

    def answer_set(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]],
                   limit: int | None = None) -> list[str]:
        """Sorted parent_asins of all products satisfying every rubric (see `answer_set_vectorised`).

        When a rubric's value can narrow the catalog through the token postings (attributes,
        product type, review opinions), numeric bounds trim the rows left in numpy and the rest
        are graded by the rubric checkers themselves (ecombench.rubrics.checkers.check); otherwise the
        vectorised polars filters run.
        Both give the same set (tests compare them, and both with a brute-force checker loop).

        Args:
            rubrics: rubric records.
            limit: stop once this many products pass and return just those (all of them when
                fewer pass): "does the query alone leave at least 3 products?" then costs a few
                checker calls even when 10^5 products of a 3.7M catalog pass.

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        rubrics = [as_spec(r) for r in rubrics]
        if self.review_rows is None and any(kind_of(r).needs_reviews for r in rubrics):
            raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
        found = [f for f in (filter_of(r).narrow(self, r) for r in rubrics) if f is not None]
        if not found:
            return self.answer_set_vectorised(rubrics)[:limit]
        narrowed = self._within_bounds(_intersect(found), rubrics)
        chunk = len(narrowed) if limit is None else max(16, 2 * limit)
        passed: list[str] = []
        for start in range(0, len(narrowed), max(chunk, 1)):
            passed += self._asins(self._graded(narrowed[start:start + chunk], rubrics))
            if limit is not None and len(passed) >= limit:
                return sorted(passed[:limit])
        return sorted(passed)

    def answer_sets_within(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                           asins: Iterable[str]) -> list[list[str]]:
        """For each rubric set, the sorted parent_asins among `asins` that satisfy all of it.

        Equal to `sorted(set(answer_set(rs)) & set(asins))` for each set `rs` (the same narrowing or
        vectorised path, restricted to the rows of `asins`), without grading the rest of the catalog: stage 3
        asks it for each feature over a universe of at most `ecombench.validation.semantic.SPLIT_UNIVERSE_CAP` products
        (`answer_set_masks`). Unknown parent_asins are skipped.

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        within = np.sort(self.products.filter(pl.col("parent_asin").is_in(list(asins)))
                         .get_column("row").to_numpy())
        out: list[list[str]] = []
        for rubric_set in rubric_sets:
            rubrics = [as_spec(r) for r in rubric_set]
            if self.review_rows is None and any(kind_of(r).needs_reviews for r in rubrics):
                raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
            found = [f for f in (filter_of(r).narrow(self, r) for r in rubrics) if f is not None]
            if found:
                rows = self._within_bounds(_intersect([*found, within]), rubrics)
                out.append(sorted(self._asins(self._graded(rows, rubrics))))
                continue
            frame, rest = self._vectorised_frame(rubrics)
            left = frame.filter(pl.col("row").is_in(pl.Series(within, dtype=pl.Int32).implode())
                                ).select("parent_asin", "price").collect()
            out.append(sorted(a for a, price in left.iter_rows()
                              if all(check(r, {"price": price}, self.table).satisfied for r in rest)))
        return out

    def supports(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]]) -> list[int]:
        """`support` of each rubric, in order."""
        return [self.support(r) for r in rubrics]

    def answer_sets(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                    limit: int | None = None) -> list[list[str]]:
        """`answer_set(rs, limit)` of each rubric set, in order."""
        return [self.answer_set(rs, limit) for rs in rubric_sets]

    def _graded(self, rows: np.ndarray, rubrics: list[RubricLike]) -> np.ndarray:
        """The rows (in their order) whose product every rubric's checker passes (ecombench.rubrics.checkers.check).

        Cheap types grade first (`RubricKind.check_cost`), each on the rows the ones before it left, and
        each sees only the columns it reads (`RubricKind.reads`): gathering a row's details into Python is
        most of an answer set's cost, and a title check needs none of them. The verdict is the one
        `all(check(r, product) for r in rubrics)` gives on the whole row.
        """
        for rubric in sorted(rubrics, key=lambda r: kind_of(r).check_cost):
            if not len(rows):
                break
            reads = kind_of(rubric).reads
            if reads is None or "reviews" in reads:
                products = self.rows(rows)
            else:
                products = self._read_rows(reads, rows)
            keep = np.fromiter((check(rubric, p, self.table).satisfied for p in products), dtype=bool,
                               count=len(rows))
            rows = rows[keep]
        return rows

    def _read_rows(self, reads: tuple[str, ...], rows: np.ndarray) -> list[dict[str, Any]]:
        """The `reads` columns of the given rows as dicts, in order (checkers only read them, never change them).

        A build grades the same few thousand rows again for each candidate's rubric sets; turning a row's details
        and facts into Python objects costs more than checking them, so each row is turned once and kept (up to
        ROW_CACHE_ROWS per set of columns; past that the kept ones are dropped and kept afresh).
        """
        cache = self._row_cache.setdefault(reads, {})
        wanted = rows.tolist()
        got = {r: p for r in wanted if (p := cache.get(r)) is not None}  # get: candidate threads share the cache
        missing = [r for r in dict.fromkeys(wanted) if r not in got]
        if missing:
            fresh = self.source.select(reads)[np.asarray(missing, dtype=np.int64)].to_dicts()
            if len(cache) + len(missing) > self.ROW_CACHE_ROWS:
                cache.clear()
            for r, product in zip(missing, fresh):
                got[r] = cache[r] = product
        return [got[r] for r in wanted]

    def _asins(self, rows: np.ndarray) -> list[str]:
        """parent_asins of the given rows, in order."""
        return self.source.get_column("parent_asin").gather(rows).to_list()

    def support(self, rubric: RubricLike | dict[str, Any]) -> int:
        """How many catalog products satisfy this one rubric (its support; the smaller, the more selective).

        Exact (the rubric checkers' rule) while at most SUPPORT_EXACT_ROWS rows hold the value's tokens;
        above that it is the number of such rows (an upper bound: only phrase order can still fail a
        row), enough to rank features by selectivity. A bound on a numeric catalog column (price,
        rating) is counted in numpy. Counts are cached by the rubric's type, field and expected value
        (canonical JSON): one build asks for the same colour or price cap thousands of times. The
        split (stage 3) hides the most selective requirements and states the least selective in the
        query.

        Args:
            rubric: a rubric, or just its spec {type, field, expected_value} (ecombench.stages.rubrics.feature_rubric).

        Returns:
            A product count, 0 to the catalog's size.

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        rubric = as_spec(rubric)
        kind = kind_of(rubric)
        key = canonical_json([rubric.type, rubric.field, plain_value(rubric)])
        count = self.support_cache.get(key)
        if count is None:
            narrowed = filter_of(rubric).narrow(self, rubric)
            if narrowed is None and rubric.field in self.numeric and kind.field_kind == "numeric":
                count = len(self._within_bounds(np.arange(self.products.height), [rubric]))
            elif narrowed is None and kind.vectorised:
                frame, _ = self._vectorised_frame([rubric])  # counted in polars, no id list
                count = frame.select(pl.len()).collect().item()
            elif narrowed is not None and len(narrowed) > self.SUPPORT_EXACT_ROWS:
                # A common value ("Black" colour in a 3.7M catalog): grading 10^5 rows with the checkers to
                # rank it among far rarer values would cost seconds; the postings' count bounds it from above.
                count = len(narrowed)
            else:
                count = len(self.answer_set([rubric]))
            self.support_cache[key] = count
        return count

    def answer_set_vectorised(self, rubrics: list[RubricLike] | list[dict[str, Any]]) -> list[str]:
        """Sorted parent_asins of all products satisfying every code-checkable rubric.

        numeric_range, entity_match, attribute_match, negative_attribute and review_opinion are
        vectorised filters; budget_match runs its checker's voucher arithmetic on the few
        products left after the others. review_opinion needs the index built with reviews.

        Raises:
            ValueError: a review_opinion rubric but no review index.
        """
        rubrics = [as_spec(r) for r in rubrics]
        frame, rest = self._vectorised_frame(rubrics)
        left = frame.select("parent_asin", "price").collect()
        ids = []
        for asin, price in left.iter_rows():
            if all(check(r, {"price": price}, self.table).satisfied for r in rest):
                ids.append(asin)
        return sorted(ids)

    def _vectorised_frame(self, rubrics: list[RubricLike]) -> tuple[pl.LazyFrame, list[RubricLike]]:
        """The products frame filtered by every vectorised rubric, and the rubrics left to the checkers (budgets)."""
        frame = self.products.lazy()
        rest = []
        for r in rubrics:
            kind = kind_of(r)
            if kind.needs_reviews and self.review_rows is None:
                raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
            frame = filter_of(r).vector_filter(self, frame, r)
            if not kind.vectorised:
                rest.append(r)
        return frame, rest

    def rows_with_option(self, key: str, condition: pl.Expr) -> pl.LazyFrame:
        """Rows having an option of field `key` that meets `condition` (over option_norm)."""
        ids = self.option_vocab.lazy().filter((pl.col("key") == key) & condition).select("opt_id")
        return self.options.lazy().join(ids, on="opt_id", how="semi").select("row").unique()
