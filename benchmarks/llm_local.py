"""Issue #14's measurements of a small local model on candidates the templates accept (driven by llm_local.sh).

Against an OpenAI-compatible server already running (benchmarks/llm_local.sh starts llama-cpp-python):

1. plan a template build over a catalog snapshot and keep the first candidates the template verbaliser
   accepts (intent order of the sample, at most --candidates of them);
2. `query`: the model writes only the query of each; `all`: it writes every part (query, persona,
   slots, opinions); each candidate with the same attempts and stages as a build;
3. `judge`: the judge on the first --judge-tasks template-accepted tasks (template text);
4. each run's tasks and rejections are written as sorted JSONL with their sha256, so running the
   same mode again (`--rerun`) must show 0 calls and the same two digests.

    .venv/bin/python benchmarks/llm_local.py <catalog> <out folder> --mode query|all|judge
        --base-url http://127.0.0.1:8080/v1 --model local --config llm.json [--candidates 40]

Prints and writes <out>/<mode>.json: keep rate over the template-accepted candidates, rejections by
reason with two quoted examples each (the rejected text and the finding), accepted queries naming
another product type (the entity rubric's type absent from the query), each kept task's template and
model query side by side, usage (calls, cache hits, repairs, tokens) and the files' sha256.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _jsonl(rows: list[dict[str, Any]], path: Path) -> str:
    from ecombench.hashing import sha256_hex

    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return sha256_hex(text.encode("utf-8"))


def _evidence(rejection: dict[str, Any]) -> dict[str, Any]:
    ev = rejection.get("evidence") or {}
    return json.loads(ev) if isinstance(ev, str) else ev


def _example(result: Any) -> dict[str, Any]:
    """What a reviewer needs to judge a rejection: the finding and the text that was written."""
    rej = result.rejection
    ev = _evidence(rej)
    return {"candidate": f"{rej['intent']}/{rej['parent_asin']}", "message": rej["message"][:300],
            "text": {k: ev[k] for k in ("text", "query", "user_query", "raw", "errors", "surface") if k in ev}}


def template_accepted(ctx: Any, products: Any, sampling: dict[str, Any], limit: int) -> list[tuple[str, dict, dict]]:
    """(intent, product row, template task) of the first `limit` candidates the template verbaliser accepts."""
    from ecombench.pipeline.build import batches_of
    from ecombench.pipeline.candidate import build_candidate

    out = []
    for intent, batch in batches_of(products, sampling, 1000, ctx.reviews):
        for product in batch:
            result = build_candidate(product, intent, ctx)
            if result.task is not None:
                out.append((intent, product, result.task))
                if len(out) == limit:
                    return out
    return out


def main(argv: list[str]) -> int:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("catalog", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--mode", choices=("query", "all", "judge"), required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", type=Path, help="build-config JSON with llm_* settings (llm_response_format, ...)")
    ap.add_argument("--candidates", type=int, default=40)
    ap.add_argument("--judge-tasks", type=int, default=20)
    ap.add_argument("--per-intent", type=int, default=90, help="candidates sampled per intent for the template plan")
    args = ap.parse_args(argv)

    from ecombench.pipeline.build import llm_client, plan_build
    from ecombench.pipeline.candidate import build_candidate
    from ecombench.pipeline.config import BuildConfig, read_build_config
    from ecombench.text import contains_phrase

    artifacts = args.out / "artifacts"
    args.out.mkdir(parents=True, exist_ok=True)
    settings = read_build_config(args.config) if args.config else {}
    # The template plan gets the model run's attempts: a candidate the templates accept only on a third
    # draw is no fair test of a model run allowed two.
    base = BuildConfig(catalog=str(args.catalog), candidates_per_intent=args.per_intent, resume=False,
                       max_attempts=settings.get("max_attempts", BuildConfig.model_fields["max_attempts"].default))
    ctx, products, sampling, _ = plan_build(base, artifacts)
    accepted = template_accepted(ctx, products, sampling, args.judge_tasks if args.mode == "judge" else args.candidates)
    update = {**settings, "llm_model": args.model, "llm_base_url": args.base_url}
    if args.mode == "judge":
        # The plan's attempts, so each task reaches the judge on the draw the templates accepted; a
        # judge_rejected retry keeps that draw and its template text (ecombench.pipeline.candidate.TEXT_RETRY_REASONS),
        # so it is the same verdict, from the cache.
        update |= {"judge": True}
    else:
        update |= {"verbaliser": "llm", "llm_parts": ["query"] if args.mode == "query" else None}
    config = base.model_copy(update={k: v for k, v in update.items() if k in BuildConfig.model_fields})
    config = BuildConfig(**config.model_dump())  # validated
    client = llm_client(config, artifacts)
    llm_ctx = dataclasses.replace(ctx, config=config, llm=client,
                                  config_hash=config.config_hash(ctx.catalog_fingerprint))

    started = time.perf_counter()
    tasks, rejections, examples = [], [], defaultdict(list)
    wrong_type, pairs = [], []
    for intent, product, template in accepted:
        result = build_candidate(product, intent, llm_ctx)
        if result.task is not None:
            tasks.append(result.task)
            pairs.append({"candidate": f"{intent}/{product['parent_asin']}", "template": template["user_query"],
                          "model": result.task["user_query"]})
            entity = next((r["expected_value"] for r in result.task["rubrics"] if r["type"] == "entity_match"), None)
            if args.mode != "judge" and entity and not contains_phrase(result.task["user_query"], str(entity)):
                wrong_type.append({"task": result.task["id"], "entity": entity, "query": result.task["user_query"]})
        else:
            rejections.append(result.rejection)
            if len(examples[result.rejection["reason"]]) < 2:
                examples[result.rejection["reason"]].append(_example(result))
        print(f"  {len(tasks) + len(rejections)}/{len(accepted)}: {len(tasks)} kept", file=sys.stderr, flush=True)
    assert client is not None
    summary = {
        "mode": args.mode, "model": args.model, "served_model": client.served_model(),
        "template_accepted": len(accepted), "kept": len(tasks),
        "keep_rate": round(len(tasks) / len(accepted), 4) if accepted else None,
        "rejections": dict(Counter(r["reason"] for r in rejections).most_common()),
        "examples": examples, "query_without_entity_type": wrong_type, "queries": pairs,
        "usage": client.usage(), "seconds": round(time.perf_counter() - started, 1),
        "tasks_sha256": _jsonl(sorted(tasks, key=lambda t: t["id"]), args.out / f"{args.mode}.tasks.jsonl"),
        "rejections_sha256": _jsonl(sorted(rejections, key=lambda r: (r["intent"], r["parent_asin"])),
                                    args.out / f"{args.mode}.rejections.jsonl"),
    }
    if args.mode == "judge":
        unscored = summary["rejections"].get("judge_unscored", 0)
        summary["judge_unscored_rate"] = round(unscored / len(accepted), 4) if accepted else None
        summary["judge_rejections"] = [{"task": f"{r['intent']}/{r['parent_asin']}", "message": r["message"],
                                        "unsupported": _evidence(r).get("unsupported")}
                                       for r in rejections if r["reason"] == "judge_rejected"]
    (args.out / f"{args.mode}.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("examples", "queries")}, indent=1,
                     ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
