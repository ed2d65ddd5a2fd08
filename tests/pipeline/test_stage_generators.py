"""One generator per stage (pipeline/candidate.py `CandidateState.rng`): a change inside feature extraction
never moves the draws of the split or of the verbaliser.

A field-table row that only feature extraction reads (a new detail field, "Included Components", that
real products of the shared electronics file carry) changes which features some targets offer. With one
generator shared by every stage, every draw after feature extraction would move for those targets; with
one per stage, the text of every task whose rubrics did not change stays byte for byte, and the opener
and persona background of every candidate stay as they were.
"""

from __future__ import annotations

import dataclasses

import pytest

from ecombench.answers.index import CatalogIndex
from ecombench.pipeline.candidate import STAGES, CandidateState, build_candidate
from ecombench.stages.verbalise import OPENERS
from ecombench.stages.verbalise_v2 import OPENERS as OPENERS_V2
from ecombench.tables.fields import FIELD_TABLE, load_field_table

NEW_ROW = '''
[fields."Included Components"]
label = "included components"
sources = ["query", "clarification"]
multi_option = true
query_phrase = "that comes with {value}"
persona_key = "included_components"
keywords = ["included components", "comes with", "in the box", "what is included", "bundled with",
            "accessories included", "package contents"]
reply = "It should come with {value}."
questions = ["What should come with it?", "What do you need in the box?"]
'''


@pytest.fixture(scope="module")
def two_builds(rich_plan, rich_catalog, tmp_path_factory):
    ctx, _, sampling = rich_plan
    # issue #12's quality rules off: this tests the generators, and with them on few targets pass both builds
    ctx = dataclasses.replace(ctx, config=ctx.config.model_copy(update={"min_hidden_answer_set": 1,
                                                                        "min_value_support": 1}))
    path = tmp_path_factory.mktemp("tables") / "fields.toml"
    path.write_text(FIELD_TABLE.read_text(encoding="utf-8") + NEW_ROW, encoding="utf-8")
    table = load_field_table(str(path))
    changed = dataclasses.replace(ctx, table=table, index=CatalogIndex.build(rich_catalog.products, table))
    out = []
    for intent, s in sampling.items():
        # Every candidate the new row can reach (it carries the field) and the first 18 it cannot: enough
        # unaffected tasks to compare, at about half the cost of building every candidate twice. (12 gave 17
        # pairs once stage 1 sampled only typed products and product facts changed which targets pass.)
        products = [rich_catalog.product(asin) for asin in s["candidates"]]
        reached = [p for p in products if _carries(p, "Included Components")]
        others = [p for p in products if not _carries(p, "Included Components")][:18]
        for product in reached + others:
            out.append((intent, product["parent_asin"], build_candidate(product, intent, ctx),
                        build_candidate(product, intent, changed)))
    return out


def _carries(product, key: str) -> bool:
    return any(d["key"] == key for d in product.get("details") or [])


def _opener(query: str) -> str:
    """The sentence opener a query starts with, of either template verbaliser (v2's openers end at "{s}")."""
    return next(o for o in OPENERS + tuple(o.split("{s}")[0] for o in OPENERS_V2) if query.startswith(o))


def _background(task):
    return {k: v for k, v in task["user_persona"].items() if k not in ("product_requirements",)}


def test_the_new_row_changes_some_targets_features(two_builds):
    moved = [(i, a) for i, a, before, after in two_builds
             if (before.task or {}).get("rubric_lock") != (after.task or {}).get("rubric_lock")]
    assert moved, "the new field changed no task: the test would prove nothing"


def test_unchanged_rubrics_give_unchanged_text(two_builds):
    pairs = [(b.task, a.task) for _, _, b, a in two_builds if b.task and a.task
             and b.task["rubric_lock"] == a.task["rubric_lock"]]
    assert len(pairs) >= 20
    for before, after in pairs:
        assert after["user_query"] == before["user_query"]
        assert after["user_persona"] == before["user_persona"]


def test_openers_and_persona_background_do_not_move_when_features_change(two_builds):
    both = [(b.task, a.task) for _, _, b, a in two_builds if b.task and a.task
            and b.task["provenance"]["attempt"] == a.task["provenance"]["attempt"]
            and b.task["rubric_lock"] != a.task["rubric_lock"]]
    assert both, "no target accepted in both builds with changed rubrics"
    for before, after in both:
        assert _opener(after["user_query"]) == _opener(before["user_query"])
        assert _background(after)["demographics"]["age_range"] == _background(before)["demographics"]["age_range"]


def test_each_stage_draws_from_a_generator_named_after_it(rich_plan, rich_catalog):
    ctx, _, sampling = rich_plan
    intent, s = next(iter(sampling.items()))
    state = CandidateState(product=rich_catalog.product(s["candidates"][0]), intent=ctx.intents[intent], attempt=0,
                           seed=0, stats=__import__("collections").Counter(), split_config=ctx.config.partition,
                           writes=frozenset())
    names = {stage.name for stage in STAGES}
    for name in ("feature_extraction", "three_source_split", "verbalisation"):
        assert name in names
        assert state.rng(name) is state.rng(name)
    assert state.rng("feature_extraction").random() != state.rng("verbalisation").random()
