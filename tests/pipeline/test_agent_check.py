"""The build's oracle check (pipeline/agent_check.py) is deterministic and only ever removes tasks."""

from __future__ import annotations

import json


def test_oracle_check_is_deterministic_and_only_turns_tasks_into_oracle_failed_rejections(sample_catalog, artifacts):
    from ecombench.pipeline.agent_check import check_agents
    from ecombench.pipeline.build import batches_of, plan_build, run_batch
    from ecombench.pipeline.config import BuildConfig

    # Issue #12's quality rules off: from 12 candidates per intent they leave few tasks; this tests the oracle check.
    config = BuildConfig(catalog=str(sample_catalog.path), candidates_per_intent=12, oracle_check=True, resume=False,
                         min_hidden_answer_set=1, min_hidden_division=1, min_value_support=1)
    ctx, products, sampling, _ = plan_build(config, artifacts)
    results = [r for intent, batch in batches_of(products, sampling, config.batch_size, ctx.reviews)
               for r in run_batch(batch, intent, ctx)]
    runs = [check_agents(config, results, ctx.table, artifacts=artifacts) for _ in range(2)]
    dumps = [json.dumps([[r.task, r.rejection] for r in out], sort_keys=True) for out, _ in runs]
    assert dumps[0] == dumps[1]
    (checked, summary), _ = runs
    before = {r.task["id"] for r in results if r.task}
    after = {r.task["id"] for r in checked if r.task}
    failed = [r.rejection for r in checked if r.rejection and r.rejection["reason"] == "oracle_failed"]
    assert len(before) >= 10 and after <= before  # 20 before issue #12's product-type and exclusion rules
    assert {f["evidence"]["task_id"] for f in failed} == before - after
    assert summary["oracle"]["candidates"] == len(before)
    assert summary["oracle"]["solved"] == len(after) == summary["null"]["tasks"]
    assert check_agents(config.model_copy(update={"oracle_check": False}), results, ctx.table,
                        artifacts=artifacts) == (results, {})
