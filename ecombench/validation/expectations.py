"""great-expectations suites over the catalog snapshot and a split's task table, with ERROR / WARN severity.

A failed ERROR expectation blocks publishing (`ExpectationsFailed`); a failed WARN one is only reported
(manifest `expectations`, report.md), like dagster's asset-check severities. The suites are plain data
(`catalog_expectations`, `task_expectations`) so they read, and are tested, without great-expectations;
GX itself is imported inside `run_suites` only, because its import costs 5-9 s (stack-notes §3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ecombench.catalog.records import PRODUCT_VALUE_RULES, ValueRule
from ecombench.errors import InputError
from ecombench.schemas.config import SplitConfig
from ecombench.tables.intents import IntentSpec, load_intents

ERROR, WARN = "error", "warn"
# GX 1.x tags each expectation with its own FailureSeverity; ours map onto it one to one.
_GX_SEVERITY = {ERROR: "critical", WARN: "warning"}

ASIN_PATTERN = r"^[A-Z0-9]{10}$"
MAX_RUBRICS = 30
# Share of tasks whose query alone must leave more than one product. Real builds (May 2025 data files)
# reach only 7-18 %, so this WARN fires today: it is the report's pointer to tasks where persona and
# clarification confirm the target instead of narrowing to it.
QUERY_LEAVES_CHOICE_MOSTLY = 0.25
PARTIAL_LIMIT = 10


class ExpectationsFailed(InputError):
    """An ERROR data expectation failed: the split is not published and nothing is written."""


@dataclass(frozen=True)
class Expectation:
    """One expectation of a suite.

    Attributes:
        name: stable short name, shown in the manifest, the report and error messages.
        severity: ERROR (blocks publishing) or WARN (reported only).
        gx_type: class name in `great_expectations.expectations`.
        kwargs: the GX class's arguments (column, bounds, mostly, ...).
        description: one sentence for readers of the report.
    """

    name: str
    severity: str
    gx_type: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""


def catalog_expectations() -> list[Expectation]:
    """The catalog snapshot suite (products frame of `ecombench.catalog.snapshot.load_snapshot`, see `catalog_table`).

    The WARN thresholds sit below what the real files give (sample / electronics-beauty-office / all
    shared files): main_category 86 / 100 / 88 %, store 100 / 99.8 / 99.8 %, price 100 % everywhere,
    categories 97 / 95 / 96 %, three or more details 86 / 99 / 87 %.
    """
    return [
        Expectation("parent_asin_present", ERROR, "ExpectColumnValuesToNotBeNull", {"column": "parent_asin"},
                    "Every product has a parent_asin."),
        Expectation("parent_asin_unique", ERROR, "ExpectColumnValuesToBeUnique", {"column": "parent_asin"},
                    "No parent_asin occurs twice (answer sets and task ids rely on it)."),
        Expectation("parent_asin_shape", ERROR, "ExpectColumnValuesToMatchRegex",
                    {"column": "parent_asin", "regex": ASIN_PATTERN},
                    "parent_asin is 10 upper-case letters or digits."),
        Expectation("title_present", ERROR, "ExpectColumnValuesToNotBeNull", {"column": "title"},
                    "Every product has a title."),
        *(_range_expectation(rule) for rule in PRODUCT_VALUE_RULES),
        Expectation("main_category_mostly_present", WARN, "ExpectColumnValuesToNotBeNull",
                    {"column": "main_category", "mostly": 0.8},
                    "At least 80 % of products have a main_category (sampling stratifies by it)."),
        Expectation("store_mostly_present", WARN, "ExpectColumnValuesToNotBeNull", {"column": "store", "mostly": 0.95},
                    "At least 95 % of products name their store."),
        Expectation("price_mostly_present", WARN, "ExpectColumnValuesToNotBeNull", {"column": "price", "mostly": 0.5},
                    "At least half of the products have a price (coupon_budget needs one)."),
        Expectation("categories_mostly_present", WARN, "ExpectColumnValuesToBeBetween",
                    {"column": "category_count", "min_value": 1, "mostly": 0.9},
                    "At least 90 % of products have a category path."),
        Expectation("details_mostly_present", WARN, "ExpectColumnValuesToBeBetween",
                    {"column": "detail_count", "min_value": 3, "mostly": 0.8},
                    "At least 80 % of products carry three or more details (most intents need five)."),
    ]


def _range_expectation(rule: ValueRule) -> Expectation:
    """The ERROR check of one of ingest's value rules (ecombench.catalog.records.PRODUCT_VALUE_RULES) over the snapshot.

    Ingest drops a value that breaks the rule, so on a snapshot it wrote this never fails; it guards
    snapshots written by older code or edited by hand.
    """
    name = f"{rule.field}_in_range" if rule.max_value is not None else f"{rule.field}_non_negative"
    bounds = {k: v for k, v in (("min_value", rule.min_value), ("max_value", rule.max_value)) if v is not None}
    return Expectation(name, ERROR, "ExpectColumnValuesToBeBetween", {"column": rule.field, **bounds},
                       f"{rule.field} is {rule.describe()} where present (catalog.records.PRODUCT_VALUE_RULES).")


def task_expectations(intents: list[str]) -> list[Expectation]:
    """The split task table suite (one row per task, see `task_table`).

    Args:
        intents: the known intent names (tables/intents.toml).
    """
    return [
        Expectation("task_id_unique", ERROR, "ExpectColumnValuesToBeUnique", {"column": "id"},
                    "No two tasks share an id."),
        Expectation("intent_known", ERROR, "ExpectColumnValuesToBeInSet",
                    {"column": "intent", "value_set": sorted(intents)},
                    "Every task's intent is in tables/intents.toml."),
        Expectation("rubric_count_in_range", ERROR, "ExpectColumnValuesToBeBetween",
                    {"column": "rubrics", "min_value": 1, "max_value": MAX_RUBRICS},
                    f"Every task has 1 to {MAX_RUBRICS} rubrics."),
        Expectation("query_rubric_present", ERROR, "ExpectColumnValuesToBeBetween",
                    {"column": "query_rubrics", "min_value": 1}, "Every task has at least one query rubric."),
        Expectation("persona_rubrics_meet_minimum", ERROR, "ExpectColumnPairValuesAToBeGreaterThanB",
                    {"column_A": "persona_rubrics", "column_B": "min_persona_rubrics", "or_equal": True},
                    "Every task has at least its intent's minimum of persona rubrics."),
        Expectation("clarification_rubrics_meet_minimum", ERROR, "ExpectColumnPairValuesAToBeGreaterThanB",
                    {"column_A": "clarification_rubrics", "column_B": "min_clarification_rubrics", "or_equal": True},
                    "Every task has at least its intent's minimum of clarification rubrics."),
        Expectation("answer_set_nonempty", ERROR, "ExpectColumnValuesToBeBetween",
                    {"column": "answer_set_size", "min_value": 1}, "Every answer set holds at least one product."),
        Expectation("query_leaves_choice", WARN, "ExpectColumnValuesToBeBetween",
                    {"column": "query_answer_set_size", "min_value": 2, "mostly": QUERY_LEAVES_CHOICE_MOSTLY},
                    f"In at least {QUERY_LEAVES_CHOICE_MOSTLY:.0%} of tasks the query alone leaves more than one "
                    "product (otherwise persona and clarification only confirm the target)."),
    ]


def catalog_table(products: pl.DataFrame) -> pl.DataFrame:
    """The catalog columns the suite reads: scalar columns as they are, list columns as their lengths.

    Nested columns stay behind: GX checks scalars, and converting lists of structs to pandas costs time.
    title, main_category and store are checked only for presence, so they go in as "" or null: the
    suite's result is the same (a null is the only value it can list), and the pandas frame of 3.7M
    products no longer holds a Python string per title (ingest's statistics peaked at 3.5 GB).
    """
    present = [pl.when(pl.col(c).is_null()).then(None).otherwise(pl.lit("")).alias(c)
               for c in ("title", "main_category", "store")]
    return products.select(
        "parent_asin", *present, "average_rating", "rating_number", "price",
        pl.col("categories").list.len().fill_null(0).alias("category_count"),
        pl.col("details").list.len().fill_null(0).alias("detail_count"),
    )


def task_table(tasks: list[dict[str, Any]], partition: SplitConfig | None = None,
               intents: dict[str, IntentSpec] | None = None) -> pl.DataFrame:
    """One row per task: id, intent, rubric counts per source, the source minimums that applied, answer-set sizes.

    Args:
        tasks: task records.
        partition: the build's split minimums (`BuildConfig.partition`); default SplitConfig().
        intents: intent specs whose overrides lower or raise the minimums; default tables/intents.toml.
    """
    partition = partition or SplitConfig()
    intents = load_intents() if intents is None else intents
    rows = []
    for t in tasks:
        spec = intents.get(t["intent"])
        minimums = partition.model_copy(update=spec.split_overrides()) if spec else partition
        sources = [r.get("info_source") for r in t["rubrics"]]
        rows.append({
            "id": t["id"], "intent": t["intent"], "rubrics": len(sources),
            "query_rubrics": sources.count("query"), "persona_rubrics": sources.count("persona"),
            "clarification_rubrics": sources.count("clarification"),
            "min_persona_rubrics": minimums.min_persona, "min_clarification_rubrics": minimums.min_clarification,
            "answer_set_size": len(t["answer_set"]),
            "query_answer_set_size": (t.get("difficulty") or {}).get("query_answer_set_size"),
        })
    schema = {"id": pl.String, "intent": pl.String, "rubrics": pl.Int64, "query_rubrics": pl.Int64,
              "persona_rubrics": pl.Int64, "clarification_rubrics": pl.Int64, "min_persona_rubrics": pl.Int64,
              "min_clarification_rubrics": pl.Int64, "answer_set_size": pl.Int64, "query_answer_set_size": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def _json_safe(value: Any) -> Any:
    """GX hands back numpy scalars, tuples and NaN; the manifest needs plain JSON."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return str(value)


def _gx_results(batch_definition: Any, frame: pl.DataFrame, suite: list[Expectation]) -> dict[str, Any]:
    """GX's result of every expectation of `suite` on `frame` (SUMMARY format), by expectation name."""
    # deferred: great-expectations takes seconds to import
    import great_expectations as gx
    import great_expectations.expectations as gxe

    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame.to_pandas()})
    gx_suite = gx.ExpectationSuite(name="suite", expectations=[
        getattr(gxe, e.gx_type)(**e.kwargs, severity=_GX_SEVERITY[e.severity], meta={"name": e.name})
        for e in suite])
    result = batch.validate(gx_suite, result_format="SUMMARY")
    return {r.expectation_config.meta["name"]: r for r in result.results}


def _batch_definition(ctx: Any, name: str) -> Any:
    return ctx.data_sources.add_pandas(f"{name}_source").add_dataframe_asset(name).add_batch_definition_whole_dataframe(
        "whole")


def _entry(e: Expectation, gx_type: str, success: bool, unexpected_count: Any, unexpected_percent: Any,
           partial: list[Any], keys: list[Any], exception: str | None) -> dict[str, Any]:
    """One expectation's outcome as the summary holds it."""
    entry = {
        "name": e.name, "type": gx_type, "severity": e.severity,
        "column": e.kwargs.get("column") or [e.kwargs.get("column_A"), e.kwargs.get("column_B")],
        "kwargs": _json_safe(e.kwargs), "description": e.description, "success": bool(success),
        "unexpected_count": _json_safe(unexpected_count), "unexpected_percent": _json_safe(unexpected_percent),
        "partial_unexpected_list": _json_safe(partial[:PARTIAL_LIMIT]),
        "partial_unexpected_keys": [_json_safe(k) for k in keys[:PARTIAL_LIMIT]],
    }
    if exception:
        entry["exception"] = exception[:300]
    return entry


def _summary(entries: list[dict[str, Any]], rows: int, key: str) -> dict[str, Any]:
    return {"success": all(x["success"] for x in entries), "rows": rows, "key_column": key,
            "evaluated": len(entries),
            "successful": sum(x["success"] for x in entries),
            "failed_errors": sum(not x["success"] and x["severity"] == ERROR for x in entries),
            "failed_warnings": sum(not x["success"] and x["severity"] == WARN for x in entries),
            "expectations": entries}


def _exception(r: Any) -> str | None:
    if r.exception_info and r.exception_info.get("raised_exception"):
        return str(r.exception_info.get("exception_message"))
    return None


def _partial_index(res: dict[str, Any]) -> list[int]:
    return [i for i in res.get("partial_unexpected_index_list") or [] if isinstance(i, int)][:PARTIAL_LIMIT]


def _validate(ctx: Any, name: str, frame: pl.DataFrame, suite: list[Expectation], key: str) -> dict[str, Any]:
    """Run one suite on one frame; per expectation its outcome and up to PARTIAL_LIMIT offending values and keys."""
    by_name = _gx_results(_batch_definition(ctx, name), frame, suite)
    keys = frame.get_column(key).to_list()
    out = []
    for e in suite:  # suite order, not GX's
        r = by_name[e.name]
        res = r.result or {}
        out.append(_entry(e, r.expectation_config.type, r.success, res.get("unexpected_count"),
                          res.get("unexpected_percent"), res.get("partial_unexpected_list") or [],
                          [keys[i] for i in _partial_index(res) if 0 <= i < len(keys)], _exception(r)))
    return _summary(out, frame.height, key)


@dataclass
class _Merged:
    """One expectation's counts summed over slices, and its first offending values and keys in row order."""

    gx_type: str = ""
    rows: int = 0
    missing: int | None = 0
    unexpected: int = 0
    partial: list[Any] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    exception: str | None = None

    def outcome(self, mostly: float) -> tuple[bool, float | None]:
        """(success, unexpected_percent) as GX decides them from the whole table's counts (`_format_map_output`)."""
        if self.missing is None:  # ExpectColumnValuesToNotBeNull: counted over every row, no missing ones
            success = self.rows == 0 or (self.rows - self.unexpected) / self.rows >= mostly
            return success, (self.unexpected / self.rows * 100 if self.rows else None)
        considered = self.rows - self.missing
        success = considered == 0 or (float(considered) - float(self.unexpected)) / float(considered) >= mostly
        return success, (self.unexpected / considered * 100 if considered else None)


def catalog_suite_in_parts(parts: Callable[[], Iterator[pl.DataFrame]]) -> dict[str, Any]:
    """`catalog_suite` over a catalog given as consecutive slices of its products: the same summary, flat memory.

    Each slice is validated on its own and the counts are summed (a failed expectation's first offending values
    and keys are the first slices' ones, in row order, as the whole table gives them). Uniqueness is the one
    expectation a slice cannot decide: the parent_asins that occur more than once are found first, in a pass
    over that column alone (`ecombench.catalog.id_tables.IdTable`, 12 bytes per product), and each slice then
    counts its rows holding one of them.

    Args:
        parts: returns a fresh iterator over consecutive frames of the products (at least the columns
            `catalog_table` reads), in row order; called twice.

    Returns:
        What `catalog_suite` returns for the whole table.
    """
    # deferred: pyarrow only where the id table reads the column
    from ecombench.catalog.id_tables import IdTable

    seen, repeated = IdTable(), set()
    for frame in parts():
        asins = frame.get_column("parent_asin").drop_nulls()
        new = seen.add_new(asins.to_arrow())
        if not new.all():
            repeated.update(asins.filter(pl.Series(~new)).to_list())
    del seen
    suite = catalog_expectations()
    unique = next(e.name for e in suite if e.gx_type == "ExpectColumnValuesToBeUnique")
    merged = {e.name: _Merged() for e in suite}
    ctx = _context()
    batch_definition = _batch_definition(ctx, "catalog")
    rows = 0
    for frame in parts():
        table = catalog_table(frame)
        by_name = _gx_results(batch_definition, table, suite)
        keys = table.get_column("parent_asin")
        for e in suite:
            r, m = by_name[e.name], merged[e.name]
            res = r.result or {}
            m.gx_type = r.expectation_config.type
            m.rows += int(res.get("element_count") or 0)
            if m.missing is not None:
                m.missing = None if "missing_count" not in res else m.missing + int(res["missing_count"] or 0)
            m.exception = m.exception or _exception(r)
            if e.name == unique:
                hit = keys.is_in(list(repeated)) if repeated else pl.Series([False] * table.height)
                m.unexpected += int(hit.sum())
                if len(m.partial) < PARTIAL_LIMIT:
                    values = keys.filter(hit).head(PARTIAL_LIMIT).to_list()
                    m.partial += values
                    m.keys += values
                continue
            m.unexpected += int(res.get("unexpected_count") or 0)
            if len(m.partial) < PARTIAL_LIMIT:
                m.partial += list(res.get("partial_unexpected_list") or [])[:PARTIAL_LIMIT]
                m.keys += [keys[i] for i in _partial_index(res) if 0 <= i < table.height]
        rows += table.height
    out = []
    for e in suite:
        m = merged[e.name]
        success, percent = m.outcome(float(e.kwargs.get("mostly", 1.0)))
        out.append(_entry(e, m.gx_type, success, m.unexpected, percent, m.partial, m.keys, m.exception))
    return _summary(out, rows, "parent_asin")


def _context() -> Any:
    # deferred: great-expectations takes seconds to import
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    # In-memory stores and no data-docs site (the default makes a temporary directory and logs about it).
    config = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False))
    ctx = gx.get_context(mode="ephemeral", project_config=config)
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)  # no tqdm bar per validation
    return ctx


def catalog_suite(products: pl.DataFrame) -> dict[str, Any]:
    """The catalog suite's summary over a snapshot's products (what `run_suites` puts under suites.catalog).

    It depends only on the snapshot, so ingest runs it once (ecombench.validation.catalog_stats) and builds reuse it.
    """
    return catalog_suite_of_table(catalog_table(products))


def catalog_suite_of_table(table: pl.DataFrame) -> dict[str, Any]:
    """`catalog_suite` of a `catalog_table` frame (ingest builds it slice by slice, validation.catalog_stats)."""
    return _validate(_context(), "catalog", table, catalog_expectations(), "parent_asin")


def run_suites(products: pl.DataFrame, tasks: list[dict[str, Any]], partition: SplitConfig | None = None,
               intents: dict[str, IntentSpec] | None = None,
               catalog_summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate the catalog snapshot and a split's tasks with great-expectations.

    Args:
        products: the snapshot's products frame (`ecombench.catalog.snapshot.load_snapshot`).
        tasks: the accepted task records.
        partition: the build's split minimums; default SplitConfig().
        intents: intent specs; default tables/intents.toml.
        catalog_summary: the catalog suite's summary when already known (`catalog_suite`, stored at ingest);
            None validates `products` here.

    Returns:
        A JSON-serialisable summary: {"great_expectations": version, "success": every expectation passed,
        "blocking": failed ERROR expectations, "suites": {"catalog": ..., "tasks": ...}}; each suite holds
        success, rows, evaluated / successful / failed counts and per expectation name, type, column,
        kwargs, severity, success, unexpected_count, unexpected_percent, partial_unexpected_list and
        partial_unexpected_keys (the rows' parent_asin or task id, per the suite's key_column), at most
        10 of each.

    Example:
        >>> summary = run_suites(products, tasks)          # doctest: +SKIP
        >>> [b["name"] for b in summary["blocking"]]        # doctest: +SKIP
        ['parent_asin_unique']
    """
    # deferred: great-expectations takes seconds to import
    import great_expectations as gx

    intents = load_intents() if intents is None else intents
    ctx = _context()
    suites = {
        "catalog": catalog_summary if catalog_summary is not None else
        _validate(ctx, "catalog", catalog_table(products), catalog_expectations(), "parent_asin"),
        "tasks": _validate(ctx, "tasks", task_table(tasks, partition, intents), task_expectations(list(intents)),
                           "id"),
    }
    blocking = [{"suite": s, **{k: v for k, v in e.items() if k not in ("kwargs", "description")}}
                for s, summary in suites.items() for e in summary["expectations"]
                if not e["success"] and e["severity"] == ERROR]
    return {"great_expectations": gx.__version__, "success": all(s["success"] for s in suites.values()),
            "blocking": blocking, "suites": suites}


def blocking_message(summary: dict[str, Any]) -> str | None:
    """One line naming every failed ERROR expectation of a `run_suites` summary; None when nothing blocks."""
    blocking = summary.get("blocking") or []
    if not blocking:
        return None
    parts = []
    for b in blocking:
        examples = list(dict.fromkeys(map(str, b.get("partial_unexpected_keys") or b.get("partial_unexpected_list")
                                          or [])))
        column = b["column"] if isinstance(b["column"], str) else "/".join(map(str, b["column"]))
        part = f"{b['suite']}.{b['name']} ({b['type']} on {column}): {b.get('unexpected_count')} unexpected"
        if b.get("exception"):
            part += f", raised {b['exception']}"
        parts.append(part + (f", e.g. {examples[:3]}" if examples else ""))
    return ("data expectations failed (ERROR): " + "; ".join(parts)
            + "; the split was not published, nothing was written")


def raise_if_blocking(summary: dict[str, Any]) -> None:
    """Raise ExpectationsFailed when a `run_suites` summary holds a failed ERROR expectation."""
    message = blocking_message(summary)
    if message:
        raise ExpectationsFailed(message)
