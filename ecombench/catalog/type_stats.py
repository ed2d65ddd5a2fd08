"""What matters for a product type, learned from the catalog's product facts.

Per type and field: how often the products' pages state the field, which values they state, and how much the
field divides the type (from ecombench.catalog.facts and each product's type). A value nearly every product of a
type states is *implied* by the type ("Wall Mount" of posters, "Round" of mugs) and is no requirement; a field the
type's products rarely state is no requirement of that type (a finish of decals, wireless of phone grips), nor is
a value no page text of the type bears out; among the rest, the fields the type's pages state most and that divide
it most are its *salient* fields, the ones its shoppers ask for first. The thresholds are settings (`TypeRules`);
types with too few products to tell fall back to their head noun's statistics ("Leather Wallet Cases" ->
"case"), else to no rule. A value that another field's stated value settles counts as stated (the field table's
`settled_by`: Department "Men's" counts as Age Range "Adult", since adults' shoes never say "adult"). Types are
grouped by their vocabulary tokens, so "Phone Cases" and "Phone Case" are one type ("phone case").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from ecombench.catalog.bounds import wilson_bound
from ecombench.catalog.devices import names_model
from ecombench.catalog.facts import FACT_SCHEMA, STATED
from ecombench.schemas.config import TypeRules
from ecombench.text import normalize, tokens

# Columns of the per-type field statistics.
TYPE_FIELD_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String(), "field": pl.String(), "products": pl.Int64(), "stating": pl.Int64(),
    "coverage": pl.Float64(), "division": pl.Float64(), "top_value": pl.String(), "top_share": pl.Float64(),
    "values": pl.Int64(), "in_text": pl.Float64()}
TYPE_VALUE_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String(), "field": pl.String(), "value": pl.String(), "products": pl.Int64(), "share": pl.Float64(),
    "in_text": pl.Float64()}


MIN_VALUE_PRODUCTS = 3  # a value's own text share decides from this many stating products; below, its field's does
# Products of a type group stating a value for a shopper of the type to exclude it (TypeStats.met_in_type).
MIN_EXCLUDED_PRODUCTS = 2


def type_groups(product_type: str | None) -> tuple[str, ...]:
    """The statistics groups of a product type, most specific first: its tokens, then its head noun alone.

    "Phone Cases" -> ("phone case", "case"); "Cases" -> ("case",); None or no word -> ().
    """
    words = tokens(product_type or "")
    if not words:
        return ()
    key = " ".join(words)
    return (key,) if len(words) == 1 else (key, words[-1])


@dataclass(frozen=True)
class TypeStats:
    """Per product type and field: coverage, values, division (`learn_type_stats`).

    Attributes:
        fields: TYPE_FIELD_SCHEMA rows: products of the type, how many state the field (stating, coverage),
            how much it divides them (division: Gini impurity of the stated values, 0 when all say the same),
            its most common value and that value's share among the stating products.
        values: TYPE_VALUE_SCHEMA rows: each value's products and share among the products stating the field.
        rules: the thresholds.
        catalog_products: products of the catalog (or catalogs, `pooled_type_stats`) counted, typed or not: how
            large a catalog the thresholds are scaled for (ecombench.pipeline.config.TypeRuleSettings.rules);
            0 when unknown.
    """

    fields: pl.DataFrame
    values: pl.DataFrame
    rules: TypeRules
    catalog_products: int = 0

    def __post_init__(self) -> None:
        fields, values = self._bounded()
        object.__setattr__(self, "_fields", {(r["type"], r["field"]): r for r in fields.to_dicts()})
        object.__setattr__(self, "_values", {(r["type"], r["field"], r["value"]): r for r in values.to_dicts()})
        object.__setattr__(self, "_types", {r["type"]: r["products"] for r in self.fields.to_dicts()})

    def _bounded(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """`fields` with coverage_low and `values` with share_high: the bounds the rules judge (`wilson_bound`)."""
        z = self.rules.margin_z
        fields = self.fields.with_columns(wilson_bound(pl.col("coverage"), pl.col("products"), z, upper=False)
                                          .alias("coverage_low"))
        values = (self.values.join(self.fields.select("type", "field", "stating"), on=["type", "field"], how="left")
                  .with_columns(wilson_bound(pl.col("share"), pl.col("stating"), z, upper=True).alias("share_high"))
                  .drop("stating"))
        return fields, values

    def group_of(self, product_type: str | None) -> str | None:
        """The statistics group deciding for `product_type`.

        The type itself when it has enough products, else its head noun (its last word), else None.
        """
        for group in type_groups(product_type):
            if self._types.get(group, 0) >= self.rules.min_products:  # type: ignore[attr-defined]
                return group
        return None

    def group_size(self, product_type: str | None) -> int:
        """Products in the group deciding for `product_type` (`group_of`); 0 when no group decides."""
        group = self.group_of(product_type)
        return 0 if group is None else int(self._types[group])  # type: ignore[attr-defined]

    def type_products(self, types: pl.DataFrame) -> pl.DataFrame:
        """(parent_asin, type_products): per product of `types` (parent_asin, product_type), `group_size`.

        Stage 1 samples candidates only from types whose statistics decide (ecombench.stages.sampling).
        """
        sizes = {t: self.group_size(t) for t in types.get_column("product_type").drop_nulls().unique().to_list()}
        size = pl.col("product_type").replace_strict(sizes, default=0, return_dtype=pl.Int64).fill_null(0)
        return types.select("parent_asin", size.alias("type_products"))

    def with_rules(self, rules: TypeRules) -> TypeStats:
        """The same statistics judged by other thresholds."""
        return TypeStats(fields=self.fields, values=self.values, rules=rules, catalog_products=self.catalog_products)

    def field_stats(self, product_type: str | None, field: str) -> dict[str, Any] | None:
        """The statistics row of (type group, field), or None when no group decides or none states it."""
        group = self.group_of(product_type)
        return None if group is None else self._fields.get((group, field))  # type: ignore[attr-defined]

    def coverage(self, product_type: str | None, field: str) -> float | None:
        """Share of the type's products whose page states the field; None when no group decides."""
        group = self.group_of(product_type)
        if group is None:
            return None
        row = self._fields.get((group, field))  # type: ignore[attr-defined]
        return 0.0 if row is None else float(row["coverage"])

    def problem(self, product_type: str | None, field: str, value: str) -> str | None:
        """Why a value is no requirement for this type, or None (also when no group decides).

        "field_rare_for_type", "value_implied_by_type" or "value_not_in_pages"; coverage and share are judged by
        their bounds (`wilson_bound`, rules.margin_z).
        """
        group = self.group_of(product_type)
        if group is None:
            return None
        field_row = self._fields.get((group, field))  # type: ignore[attr-defined]
        if field_row is None or field_row["coverage_low"] < self.rules.min_coverage:
            return "field_rare_for_type"
        row = self._values.get((group, field, value))  # type: ignore[attr-defined]
        if row is not None and row["share_high"] >= self.rules.implied_share:
            return "value_implied_by_type"
        if self._in_text(group, field, value) < self.rules.min_in_text:
            return "value_not_in_pages"
        return None

    def _in_text(self, group: str, field: str, value: str) -> float:
        """Share of the group's products stating the value whose title, bullets or description state it.

        A value fewer than MIN_VALUE_PRODUCTS products state is judged by its field's share; a field no product
        states, 0.
        """
        row = self._values.get((group, field, value))  # type: ignore[attr-defined]
        if row is not None and row["products"] >= MIN_VALUE_PRODUCTS:
            return float(row["in_text"])
        field_row = self._fields.get((group, field))  # type: ignore[attr-defined]
        return 0.0 if field_row is None else float(field_row["in_text"])

    def value_products(self, product_type: str | None, field: str, value: str) -> int | None:
        """How many products of the type's group state the value; None when no group decides."""
        group = self.group_of(product_type)
        if group is None:
            return None
        row = self._values.get((group, field, value))  # type: ignore[attr-defined]
        return 0 if row is None else int(row["products"])

    def met_in_type(self, product_type: str | None, field: str, value: str) -> bool:
        """Whether MIN_EXCLUDED_PRODUCTS products of the type's group state the value (True when no group decides).

        A shopper excludes only a value they would meet among products of the type (ecombench.stages.features,
        ecombench.validation.semantic.biting_exclusions): "any material but metal" of a fabric shower curtain, where
        one curtain of the shared catalog states metal (for its hooks), was read as meaningless.
        """
        products = self.value_products(product_type, field, value)
        return products is None or products >= MIN_EXCLUDED_PRODUCTS

    def names_a_fitted_device(self, product_type: str | None, fields: frozenset[str], value: str) -> bool:
        """Whether `value` is words of a device the type's products fit (False when no group decides).

        True when a value of one of `fields` (the compatibility fields) among the type group's products holds it as
        a phrase: "Galaxy" of "Samsung Galaxy S20" for cases. A shopper of an iPhone case read "any theme but Galaxy
        or rainbow" as the phone, not a print (ecombench.stages.features, ecombench.validation.semantic).
        """
        group = self.group_of(product_type)
        if group is None:
            return False
        cache: dict[tuple[str, frozenset[str]], list[str]] = self.__dict__.setdefault("_fitted_devices", {})
        if (group, fields) not in cache:
            fitted = self.values.filter((pl.col("type") == group) & pl.col("field").is_in(sorted(fields)))
            cache[(group, fields)] = [f" {normalize(v)} " for v in fitted.get_column("value").unique().to_list()]
        needle = normalize(value)  # as `contains_phrase` reads a phrase, each device normalised once
        return bool(needle) and any(f" {needle} " in device for device in cache[(group, fields)])

    def labels_borne_out(self, product_type: str | None, field: str, value: str) -> bool:
        """Whether the type's pages put the value in words often enough to say it without the target's own text.

        A label alone then carries a cue (ecombench.pipeline.candidate), and a shopper may exclude the value
        (ecombench.stages.features, ecombench.validation.semantic.biting_exclusions): True when the share of the
        type's products stating it whose text states it (`_in_text`) reaches rules.min_cue_in_text, or when no group
        decides for the type.
        """
        group = self.group_of(product_type)
        return group is None or self._in_text(group, field, value) >= self.rules.min_cue_in_text

    def device_share(self, product_type: str | None, fields: frozenset[str]) -> float | None:
        """Share of the type's products naming a device model in one of `fields` (the compatibility fields).

        The largest over the fields of the products stating a value that names a device by its model
        (ecombench.catalog.devices.names_model), at most those stating the field; None when no group decides. A line
        named alone says more loosely what a product works with ("Mouse for iPad"): it makes no type an accessory.
        """
        group = self.group_of(product_type)
        if group is None:
            return None
        cache: dict[tuple[str, str], float] = self.__dict__.setdefault("_device_share", {})
        best = 0.0
        for field in sorted(fields):
            row = self._fields.get((group, field))  # type: ignore[attr-defined]
            if row is None:
                continue
            if (group, field) not in cache:
                values = self.values.filter((pl.col("type") == group) & (pl.col("field") == field))
                named = sum(p for v, p in values.select("value", "products").iter_rows() if names_model(v))
                cache[(group, field)] = min(named, int(row["stating"])) / max(int(row["products"]), 1)
            best = max(best, cache[(group, field)])
        return best

    def fits_devices(self, product_type: str | None, fields: frozenset[str]) -> bool:
        """Whether the type is a device accessory (`device_share` >= rules.min_device_share, or no group decides)."""
        share = self.device_share(product_type, fields)
        return share is None or share >= self.rules.min_device_share

    def usable_fields(self, facts: pl.DataFrame, types: pl.DataFrame,
                      always: frozenset[str] = frozenset()) -> pl.DataFrame:
        """(parent_asin, usable_fields): per product, the fields whose page states a value `problem` lets through.

        What stage 2 can draw a requirement from, counted for every product at once (stage 1 samples on it).
        A product whose type no group decides for counts every stated field.

        Args:
            facts: the catalog's facts (FACT_SCHEMA, with parent_asin).
            types: (parent_asin, product_type) of every product.
            always: fields usable whatever their statistics (the device an accessory fits).
        """
        groups = {t: self.group_of(t) for t in types.get_column("product_type").drop_nulls().unique().to_list()}
        typed = types.select("parent_asin", pl.col("product_type").replace_strict(
            groups, default=None, return_dtype=pl.String).alias("type"))
        stated = (facts.filter(pl.col("polarity") == STATED).select("parent_asin", "field", "value")
                  .unique().join(typed, on="parent_asin", how="left"))
        bounded_fields, bounded_values = self._bounded()
        fields = bounded_fields.select("type", "field", "coverage_low", pl.col("in_text").alias("field_in_text"))
        values = bounded_values.select("type", "field", "value", "share_high",
                                       pl.col("products").alias("value_products"),
                                       pl.col("in_text").alias("value_in_text"))
        rules = self.rules
        in_text = (pl.when(pl.col("value_products").fill_null(0) >= MIN_VALUE_PRODUCTS).then(pl.col("value_in_text"))
                   .otherwise(pl.col("field_in_text")).fill_null(1.0))
        ok = (pl.col("type").is_null() | pl.col("field").is_in(list(always))
              | ((pl.col("coverage_low").fill_null(0.0) >= rules.min_coverage)
                 & (pl.col("share_high").fill_null(0.0) < rules.implied_share) & (in_text >= rules.min_in_text)))
        usable = (stated.join(fields, on=["type", "field"], how="left").join(values, on=["type", "field", "value"],
                                                                                how="left")
                  .filter(ok).group_by("parent_asin").agg(pl.col("field").n_unique().cast(pl.Int64)
                                                          .alias("usable_fields")))
        return (types.select("parent_asin").join(usable, on="parent_asin", how="left", maintain_order="left")
                .with_columns(pl.col("usable_fields").fill_null(0)))

    def salience(self, product_type: str | None, field: str) -> float:
        """How much the type's shoppers care about a field: coverage times division (0 when unknown)."""
        row = self.field_stats(product_type, field)
        return 0.0 if row is None else float(row["coverage"]) * float(row["division"])


def learn_type_stats(facts: pl.DataFrame, types: pl.DataFrame, rules: TypeRules | None = None,
                     settled_by: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None) -> TypeStats:
    """Per type (and per head noun) and field statistics of the stated facts.

    Args:
        facts: the catalog's facts (ecombench.catalog.facts.FACT_SCHEMA).
        types: (parent_asin, product_type) of every product (None where it has no type).
        rules: thresholds; None takes the defaults.
        settled_by: values that other fields' values settle (`TypeStatSums`; FieldTable.settled_by).

    Returns:
        The statistics of every type and every head noun (a product counts in each of its `type_groups`).
    """
    sums = TypeStatSums(types, settled_by)
    sums.add(facts)
    return sums.stats(rules)


class TypeStatSums:
    """`learn_type_stats` from the facts of a catalog given in slices: counts summed per slice, not all facts at once.

    A product's facts are all in one slice (the slices hold disjoint products), so the products stating a value or a
    field are the sums of each slice's, and a text share is a sum of text facts over a sum of facts.
    """

    def __init__(self, types: pl.DataFrame,
                 settled_by: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None) -> None:
        """Count nothing yet.

        Args:
            types: (parent_asin, product_type) of every product (None where it has no type).
            settled_by: {field: {other field: {normalised value of the other field: value of the field}}}: a
                product stating such a value of the other field counts as stating the value of the field, with the
                same sources ("Men's" of Department counts as Age Range "Adult"; FieldTable.settled_by).
        """
        self.settled_by = settled_by or {}
        named = types.drop_nulls("product_type")
        group_rows = [(t, g) for t in named.get_column("product_type").unique().sort().to_list()
                      for g in type_groups(t)]
        type_group = pl.DataFrame(group_rows, schema={"product_type": pl.String, "type": pl.String}, orient="row")
        self.groups = (named.select("parent_asin", "product_type").join(type_group, on="product_type")
                       .drop("product_type").unique())
        self.sizes = self.groups.group_by("type").agg(pl.len().cast(pl.Int64).alias("products"))
        self.catalog_products = types.height
        self._values: list[pl.DataFrame] = []
        self._fields: list[pl.DataFrame] = []

    def add(self, facts: pl.DataFrame) -> None:
        """Count one slice's facts (FACT_SCHEMA, with parent_asin; no product in an earlier slice)."""
        stated = (facts.filter(pl.col("polarity") == STATED)
                  .select("parent_asin", "field", "value",
                          pl.col("sources").list.eval(pl.element() != "details").list.any().alias("text")))
        stated = pl.concat([stated, *self._settled(stated)]).unique(["parent_asin", "field", "value"])
        stated = stated.join(self.groups, on="parent_asin")
        # text: facts stated in text; facts: those whose text is known (a mean's numerator and denominator).
        text = (pl.col("text").sum().cast(pl.Int64).alias("text"), pl.col("text").count().cast(pl.Int64).alias("facts"))
        self._values.append(stated.group_by("type", "field", "value").agg(
            pl.len().cast(pl.Int64).alias("products"), *text))
        self._fields.append(stated.group_by("type", "field").agg(
            pl.col("parent_asin").n_unique().cast(pl.Int64).alias("stating"), *text))
        # The counts so far folded into one frame now and then, so they stay the size of the statistics.
        if len(self._values) >= 8:
            self._values, self._fields = [self._per_value()], [self._stating()]

    def _settled(self, stated: pl.DataFrame) -> list[pl.DataFrame]:
        """The facts `settled_by` derives from `stated` (parent_asin, field, value, text), one frame per field pair."""
        out = []
        for field, by in self.settled_by.items():
            for other, values in by.items():
                own = stated.filter(pl.col("field") == other)
                settled = {raw: values[key] for raw in own.get_column("value").unique().to_list()
                           if (key := normalize(raw)) in values}
                derived = (own.filter(pl.col("value").is_in(list(settled)))
                           .select("parent_asin", pl.lit(field).alias("field"),
                                   pl.col("value").replace_strict(settled, return_dtype=pl.String), "text")
                           .group_by("parent_asin", "field", "value").agg(pl.col("text").any()))
                # a value the page states itself keeps its own sources
                out.append(derived.join(stated, on=["parent_asin", "field", "value"], how="anti"))
        return out

    def _per_value(self) -> pl.DataFrame:
        return (pl.concat(self._values).group_by("type", "field", "value")
                .agg(pl.col("products").sum(), pl.col("text").sum(), pl.col("facts").sum()))

    def _stating(self) -> pl.DataFrame:
        return (pl.concat(self._fields).group_by("type", "field")
                .agg(pl.col("stating").sum(), pl.col("text").sum(), pl.col("facts").sum()))

    def stats(self, rules: TypeRules | None = None) -> TypeStats:
        """The statistics of the facts counted so far."""
        if not self._values:
            self.add(pl.DataFrame(schema=FACT_SCHEMA))
        per_value = self._per_value().select("type", "field", "value", "products",
                                             (pl.col("text") / pl.col("facts")).alias("in_text"))
        stating = self._stating().select("type", "field", "stating",
                                         (pl.col("text") / pl.col("facts")).alias("in_text"))
        return _summarise(per_value, stating, self.sizes, rules or TypeRules(), self.catalog_products)


def pooled_type_stats(own: TypeStats, base: TypeStats) -> TypeStats:
    """The statistics of `own`'s products and `base`'s together, judged by `own`'s thresholds.

    Per type group, field and value the counts are added (products of the type, stating products, products per
    value) and the text shares weighted by them; shares, coverage, division and the top value are computed again.
    How a catalog of a new category, too small to tell some types apart, is judged with what another catalog
    learned of the types both hold (`ecombench ingest --vocabulary-from`); a type only one of them holds keeps its
    own figures. The pooled statistics count both catalogs' products (`catalog_products`), so the thresholds
    scale as for one catalog of both: the same type groups decide as in a build over both.
    """
    sizes = (pl.concat([s.fields.group_by("type").agg(pl.col("products").first()) for s in (own, base)])
             .group_by("type").agg(pl.col("products").sum()))
    per_value = (pl.concat([s.values.select("type", "field", "value", "products", "in_text") for s in (own, base)])
                 .group_by("type", "field", "value")
                 .agg(pl.col("products").sum(),
                      ((pl.col("in_text") * pl.col("products")).sum() / pl.col("products").sum()).alias("in_text")))
    field_text = per_value.group_by("type", "field").agg(
        ((pl.col("in_text") * pl.col("products")).sum() / pl.col("products").sum()).alias("in_text"))
    stating = (pl.concat([s.fields.select("type", "field", "stating") for s in (own, base)])
               .group_by("type", "field").agg(pl.col("stating").sum()).join(field_text, on=["type", "field"]))
    return _summarise(per_value, stating, sizes, own.rules, own.catalog_products + base.catalog_products)


def _summarise(per_value: pl.DataFrame, stating: pl.DataFrame, sizes: pl.DataFrame, rules: TypeRules,
               catalog_products: int) -> TypeStats:
    """TypeStats from per (type, field, value) products and text share, and per type products.

    Args:
        per_value: (type, field, value, products, in_text): products stating the value, the share of them
            stating it in their title, bullets or description.
        stating: (type, field, stating, in_text): products stating the field (a product stating two values counts
            once) and the share of its (product, value) facts stated in text.
        sizes: (type, products): products of each type group.
        rules: the thresholds.
        catalog_products: products counted, typed or not.
    """
    values = (per_value.join(stating.drop("in_text"), on=["type", "field"])
              .with_columns((pl.col("products") / pl.col("stating")).alias("share"))
              .select(list(TYPE_VALUE_SCHEMA)).sort("type", "field", "value"))
    top = (values.sort("share", "value", descending=[True, False]).group_by("type", "field", maintain_order=True)
           .agg(pl.col("value").first().alias("top_value"), pl.col("share").first().alias("top_share"),
                pl.len().cast(pl.Int64).alias("values"),
                (1 - (pl.col("share") / pl.col("share").sum()).pow(2).sum()).alias("division")))
    fields = (stating.join(sizes, on="type").join(top, on=["type", "field"])
              .with_columns((pl.col("stating") / pl.col("products")).alias("coverage"))
              .select(list(TYPE_FIELD_SCHEMA)).sort("type", "field"))
    return TypeStats(fields=fields, values=values, rules=rules, catalog_products=catalog_products)
