"""The rubric-type registries: grading (ecombench.rubrics), answer-set filters, phrasing, keyed by type name.

A small extra type registered here — "the title must not mention a word" — is checked, counted in
answer sets and stated in a query with no change outside its three classes, on real products of the
bundled sample.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import polars as pl
import pytest

from ecombench.answers.filters import RubricFilter, register_filter, unregister_filter
from ecombench.rubrics import (
    RUBRIC_TYPES,
    SATISFIED,
    NotSatisfied,
    RubricKind,
    as_rubric,
    kind_for_feature,
    kind_of,
    register,
    unregister,
)
from ecombench.rubrics.checkers import check
from ecombench.schemas.models import Rubric, RubricType
from ecombench.stages.phrasing import RubricPhrasing, register_phrasing, rubric_forms, unregister_phrasing
from ecombench.stages.verbalise import write_query
from ecombench.tables.fields import load_field_table
from ecombench.text import keywords


def test_every_rubric_type_of_the_contract_has_one_class():
    assert set(RUBRIC_TYPES) == {t.value for t in RubricType}
    assert len({k.feature_kind for k in RUBRIC_TYPES.values()}) == len(RUBRIC_TYPES)
    kinds = {spec.kind for spec in load_field_table().fields.values()}
    assert {k.field_kind for k in RUBRIC_TYPES.values()} <= kinds
    assert kind_for_feature("detail") is RUBRIC_TYPES["attribute_match"]


def test_an_unknown_type_is_a_clear_error():
    with pytest.raises(KeyError, match="no rubric type 'colour_guess' is registered"):
        kind_of("colour_guess")
    assert check({"type": "colour_guess", "field": "title", "expected_value": "x"}, {}).status == "unscorable"


def test_a_record_and_its_typed_rubric_check_alike(sample_catalog):
    product = sample_catalog.products.row(0, named=True)
    record = {"id": "r1", "type": "entity_match", "field": "title",
              "expected_value": sorted(keywords(product["title"]))[0], "info_source": "query",
              "description": "The product is a kind of it."}
    typed = as_rubric(record)
    assert isinstance(typed, Rubric) and typed.record() == record
    assert check(record, product).status == check(typed, product).status == "satisfied"


class TitleLacks(RubricKind):
    """Test-only type: the title does not mention a word ("not a bundle"). Its grading."""

    type = "title_lacks"
    feature_kind = "title_lacks"
    field_kind = "entity"

    def check(self, rubric: Any, product: Mapping[str, Any], table: Any):
        hit = keywords(str(rubric.expected_value)) & keywords(product.get("title") or "")
        return NotSatisfied(f"title mentions {sorted(hit)}") if hit else SATISFIED


class TitleLacksFilter(RubricFilter):
    """Its answer-set filter."""

    type = "title_lacks"

    def vector_filter(self, index: Any, frame: pl.LazyFrame, rubric: Any) -> pl.LazyFrame:
        for word in sorted(keywords(str(rubric.expected_value))):
            frame = frame.filter(~pl.col("title_norm").str.contains(f" {word} ", literal=True))
        return frame


class TitleLacksPhrasing(RubricPhrasing):
    """Its phrasing."""

    type = "title_lacks"
    query_role = "exclusion"

    def describe(self, field: str, value: Any, table: Any) -> str:
        return f"The product's title does not mention {value}."

    def query_phrase(self, rubric: Any, table: Any) -> str:
        return f"it must not be a {rubric.expected_value}"


@pytest.fixture
def title_lacks():
    register(TitleLacks)
    register_filter(TitleLacksFilter)
    register_phrasing(TitleLacksPhrasing)
    yield TitleLacks
    unregister("title_lacks")
    unregister_filter("title_lacks")
    unregister_phrasing("title_lacks")


def _rubric(rid: str, rtype: str, value: str, field: str = "title") -> Rubric:
    # model_construct: the JSON contract's enum does not know a test-only type; the registry does.
    return Rubric.model_construct(id=rid, type=rtype, field=field, expected_value=value, info_source="query",
                                  description="a requirement")


def test_a_registered_extra_type_is_checked_counted_and_stated(title_lacks, sample_catalog):
    table, index = sample_catalog.table, sample_catalog.index
    products = sample_catalog.products.to_dicts()
    with_set = [p for p in products if "set" in keywords(p["title"] or "")]
    assert with_set, "the bundled sample has titles mentioning a set"
    lacks = _rubric("r2", "title_lacks", "set")
    assert check(lacks, with_set[0], table).status == "not_satisfied"
    # Answer sets: the index's vectorised path equals a brute-force loop with the checker.
    entity = _rubric("r1", "entity_match", "case")
    want = sorted(p["parent_asin"] for p in products
                  if check(entity, p, table).satisfied and check(lacks, p, table).satisfied)
    assert index.answer_set([lacks, entity]) == want and want
    assert index.support(lacks) == len(products) - len(with_set)
    # Text: the template query states it where its query role puts it, and its value forms are found.
    query = write_query([entity, lacks], table, random.Random(0))
    assert "it must not be a set" in query.lower() or "It must not be a set" in query
    assert rubric_forms(lacks) == ["set"]
