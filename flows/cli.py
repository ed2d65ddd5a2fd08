"""The `ecombench` command line (Typer): ingest a catalog, build a split, read what was built.

Errors are one line naming the file, record or setting, with a non-zero exit; nothing already
written is touched (snapshots and split versions are written whole or not at all).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from flows.settings import ARTIFACTS, apply_prefect_defaults

apply_prefect_defaults()

app = typer.Typer(help="Build validated benchmark splits for LLM shopping agents from Amazon Reviews 2023.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

SAMPLE_CATALOG = ARTIFACTS / "catalogs" / "sample"


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _ingest(meta: list[Path], reviews: list[Path], out: Path, batch_size: int, workers: int | None = None) -> dict:
    from flows.ingest import ingest_flow

    from stages.ingest import sniff_kind

    # Check what can be checked before the flow starts, so a typo costs no Prefect start-up.
    for path in [*meta, *reviews]:
        if not Path(path).is_file():
            _fail(f"input file not found: {path}")
    for path, want, option in [*((p, "meta", "--meta") for p in meta), *((p, "reviews", "--reviews") for p in reviews)]:
        kind = sniff_kind(path)
        if kind is not None and kind != want:
            other = "--reviews" if option == "--meta" else "--meta"
            _fail(f"{path} looks like a {kind} file but was given as {option}; pass it with {other}")
    if out.exists():
        _fail(f"catalog snapshot {out} already exists; choose another --name/--out (nothing was written)")
    typer.echo(f"ingesting {len(meta)} metadata and {len(reviews)} review file(s) into {out} ...", err=True)
    return ingest_flow(meta, reviews, out, batch_size, workers)


@app.command()
def ingest(
    meta: Annotated[Optional[list[Path]], typer.Option("--meta", help="Metadata JSONL(.gz) file; repeat for more. "
                                                       "Default: the bundled real sample.")] = None,
    reviews: Annotated[Optional[list[Path]], typer.Option("--reviews", help="Review JSONL(.gz) file; repeatable.")] = None,
    name: Annotated[str, typer.Option(help="Snapshot name under artifacts/catalogs/.")] = "sample",
    out: Annotated[Optional[Path], typer.Option(help="Snapshot directory (overrides --name).")] = None,
    batch_size: Annotated[int, typer.Option(help="Rows per parquet row group.")] = 20_000,
    workers: Annotated[Optional[int], typer.Option(help="Processes parsing the input (default: every CPU); "
                                                   "the snapshot is the same for any count.")] = None,
) -> None:
    """Ingest Amazon Reviews 2023 files (raw or Hugging Face form, plain or .gz) into a catalog snapshot."""
    from flows.ingest import sample_inputs

    if not meta:
        if reviews:
            _fail("--reviews needs the products they review: add --meta FILE (without both, the bundled sample is used)")
        meta, reviews = sample_inputs()
    out = out or ARTIFACTS / "catalogs" / name
    try:
        if workers is not None and workers < 1:
            _fail(f"--workers must be at least 1, got {workers}")
        manifest = _ingest(list(meta), list(reviews or []), out, batch_size, workers)
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        _fail(str(exc).splitlines()[0])
    c = manifest["counts"]
    typer.echo(f"catalog snapshot: {out}")
    typer.echo(f"  {c['products']} products, {c['reviews']} reviews, {c['bad_records']} bad records"
               + (f" {c['bad_by_reason']}" if c["bad_records"] else ""))
    if c["bad_records"]:
        typer.echo(f"  bad records listed in {out / 'bad_records.jsonl'}")
    for entry in manifest["inputs"]:
        if entry["bad_by_reason"].get("truncated_gzip"):
            typer.echo(f"  warning: {entry['path']} ends early (truncated gzip); records before the cut were kept",
                       err=True)
    if c.get("orphan_reviews"):
        typer.echo(f"  warning: {c['orphan_reviews']} reviews name products absent from the metadata and were skipped",
                   err=True)


@app.command()
def build(
    catalog: Annotated[Optional[Path], typer.Option(help="Catalog snapshot directory. Default: the bundled "
                                                    "sample, ingested first if missing.")] = None,
    split: Annotated[str, typer.Option(help="Split name (artifacts/splits/<split>/).")] = "sample",
    version: Annotated[Optional[str], typer.Option(help="Version name; default: next free v<N>. "
                                                   "An existing version is never overwritten.")] = None,
    intent: Annotated[Optional[list[str]], typer.Option("--intent", help="Intent to build; repeatable. "
                                                        "Default: every intent of stages/intents.toml.")] = None,
    candidates: Annotated[Optional[int], typer.Option(help="Candidates sampled per intent (default 100).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Run seed; every random choice derives from it "
                                                "(default 0).")] = None,
    max_answer_set: Annotated[Optional[int], typer.Option(help="Reject candidates with a larger answer set "
                                                          "(default 5).")] = None,
    min_query_answer_set: Annotated[Optional[int], typer.Option(help="Reject candidates whose query alone leaves "
                                                                "fewer catalog products (query_pins_target; default "
                                                                "3, 1 disables).")] = None,
    category: Annotated[Optional[list[str]], typer.Option("--category", help="Restrict to a main_category; "
                                                          "repeatable.")] = None,
    config: Annotated[Optional[Path], typer.Option(help="JSON file of build settings (flows/settings.py "
                                                   "BuildConfig); command-line options override it.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Splits root directory.")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="Candidates per Prefect task (default 50).")] = None,
    verbaliser: Annotated[Optional[str], typer.Option(help="template (offline, default) or llm.")] = None,
    model: Annotated[Optional[str], typer.Option(help="llm: model id (else ECOMBENCH_LLM_MODEL).")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="llm: OpenAI-compatible server URL (else "
                                                    "OPENAI_BASE_URL); the key is read from OPENAI_API_KEY.")] = None,
    oracle_check: Annotated[Optional[bool], typer.Option("--oracle-check/--no-oracle-check", help="Reject tasks the "
                            "sandbox's oracle cannot solve (oracle_failed) and record oracle and null-agent accuracy "
                            "(default off).")] = None,
    task_runner: Annotated[Optional[str], typer.Option(help="threads (one process, default) or dask (a Dask "
                                                       "cluster: --dask-address, else a temporary local one).")] = None,
    dask_address: Annotated[Optional[str], typer.Option(help="Dask scheduler address, e.g. tcp://host:8786 "
                                                        "(implies --task-runner dask).")] = None,
    dask_workers: Annotated[Optional[int], typer.Option(help="dask without --dask-address: worker processes of "
                                                        "the temporary local cluster (default 2).")] = None,
    llm_part: Annotated[Optional[list[str]], typer.Option("--llm-part", help="llm: a part the model writes (query, "
                                                          "persona, slots, opinions); repeatable. Default: all.")] = None,
    judge: Annotated[Optional[bool], typer.Option("--judge/--no-judge", help="Stage 7 also asks an LLM judge "
                                                  "(needs --model and --base-url; default off).")] = None,
) -> None:
    """Run the seven stages over a catalog snapshot and publish a versioned split with its rejection report."""
    from pydantic import ValidationError

    from flows.settings import BuildConfig

    settings: dict = {}
    if config is not None:
        try:
            settings = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            _fail(f"{config}: cannot read build config ({exc})")
        if not isinstance(settings, dict):
            _fail(f"{config}: a build config is a JSON object of settings, not a {type(settings).__name__}")
        unknown = sorted(set(settings) - set(BuildConfig.model_fields))
        if unknown:
            _fail(f"{config}: unknown build setting(s) {unknown}; valid: {sorted(BuildConfig.model_fields)}")
    if catalog is None and "catalog" not in settings:
        catalog = SAMPLE_CATALOG
        if not (catalog / "manifest.json").exists():
            from flows.ingest import sample_inputs

            try:
                _ingest(*sample_inputs(), catalog, 20_000)
            except (FileNotFoundError, FileExistsError, ValueError) as exc:
                _fail(str(exc).splitlines()[0])
    overrides = {"catalog": str(catalog) if catalog else None, "intents": intent, "categories": category,
                 "batch_size": batch_size, "seed": seed, "candidates_per_intent": candidates,
                 "max_answer_set": max_answer_set, "min_query_answer_set": min_query_answer_set,
                 "verbaliser": verbaliser, "llm_model": model,
                 "llm_base_url": base_url, "oracle_check": oracle_check,
                 "task_runner": task_runner or ("dask" if dask_address else None),
                 "dask_address": dask_address, "dask_workers": dask_workers,
                 "llm_parts": llm_part, "judge": judge}
    settings.update({k: v for k, v in overrides.items() if v is not None})
    try:
        cfg = BuildConfig(**settings)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "partition"
        _fail(f"build setting {where}: {err['msg']}")
    from flows.catalog import SnapshotError, check_snapshot
    from stages.intents import load_intents

    unknown = sorted(set(cfg.intents) - set(load_intents()))
    if unknown:
        _fail(f"unknown intent(s) {unknown}; known: {sorted(load_intents())} (stages/intents.toml)")
    try:
        check_snapshot(Path(cfg.catalog))
    except SnapshotError as exc:
        _fail(str(exc))
    splits_root = out or ARTIFACTS / "splits"
    if version and (splits_root / split / version).exists():
        _fail(f"split version {splits_root / split / version} already exists; choose another --version "
              "(nothing was written)")
    from flows.build import run_build
    from flows.publish import VersionExists
    from schemas import SchemaError

    typer.echo(f"building split '{split}' from {cfg.catalog} ({len(cfg.intents)} intents x "
               f"{cfg.candidates_per_intent} candidates) ...", err=True)
    try:
        result = run_build(cfg, split, version, str(splits_root), show_progress=True)
    except (SnapshotError, VersionExists, SchemaError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc).splitlines()[0])
    if "error" in result:
        _fail(result["error"])
    _print_summary(Path(result["path"]), result["manifest"])


def _print_summary(path: Path, manifest: dict) -> None:
    c = manifest["counts"]
    typer.echo(f"split version: {path}")
    typer.echo(f"  {c['tasks']} tasks accepted, {c['rejections']} candidates rejected")
    for intent, v in c["per_intent"].items():
        typer.echo(f"  {intent:<22} accepted {v['accepted']:>4}  rejected {v['rejected']:>4}")
    if c["rejection_reasons"]:
        typer.echo("  rejections by reason: " + ", ".join(f"{k} {v}" for k, v in c["rejection_reasons"].items()))
    checks = manifest.get("agent_checks") or {}
    if checks:
        o, n = checks["oracle"], checks["null"]
        typer.echo(f"  oracle check: solved {o['solved']} of {o['candidates']} validated tasks within "
                   f"{checks['budget']['max_tool_calls']} tool calls ({o['rejected_oracle_failed']} rejected as "
                   f"oracle_failed); null agent {n['correct']} of {n['tasks']} ({n['accuracy']:.1%})")
    typer.echo(f"  tasks.jsonl sha256 {manifest['files']['tasks.jsonl']['sha256']}")
    if not manifest["catalog"].get("field_table_current", True):
        typer.echo("  warning: the catalog was ingested with another stages/fields.toml; re-ingest it so changed "
                   "aliases apply", err=True)
    for intent, s in manifest["sampling"].items():
        if s["shortfall"]:
            typer.echo(f"  warning: {intent}: {s['sampled']} of {s['requested']} candidates ({s['eligible']} products "
                       f"have {s['rule']}; each product serves one intent)", err=True)
    typer.echo(f"  report: {path / 'report.md'}")


def _version_dir(arg: Path) -> Path:
    """A version argument as given: a directory, or <split>[@<version>] under artifacts/splits (newest if no version)."""
    from flows.inspect import SplitReadError, resolve_version

    if not arg.exists() and len(arg.parts) == 1:
        try:
            return resolve_version(str(arg), ARTIFACTS / "splits")
        except SplitReadError as exc:
            _fail(str(exc))
    return arg


@app.command()
def report(version_dir: Annotated[Path, typer.Argument(help="A split version directory, <split>@<version>, "
                                                                   "or <split> for its newest version.")]
           ) -> None:
    """Print a split version's report.md."""
    version_dir = _version_dir(version_dir)
    path = version_dir / "report.md"
    if not path.is_file():
        _fail(f"{path} not found: is {version_dir} a split version directory?")
    sys.stdout.write(path.read_text(encoding="utf-8"))


@app.command()
def categories(
    catalog: Annotated[Path, typer.Option(help="Catalog snapshot directory.")],
    top: Annotated[int, typer.Option(min=1, help="Most frequent detail keys listed per category.")] = 20,
    min_coverage: Annotated[float, typer.Option(min=0.0, max=1.0, help="List keys missing from the field table "
                                                "from this share of a category's products.")] = 0.10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Per main_category: products, eligible products per intent, frequent detail keys and which the field table lacks."""
    import polars as pl

    from flows.catalog import SnapshotError, load_snapshot
    from stages.categories import category_report, format_report
    from stages.fields import load_field_table
    from stages.intents import load_intents

    try:
        products, _ = load_snapshot(catalog)
    except SnapshotError as exc:
        _fail(str(exc))
    except (OSError, pl.exceptions.PolarsError) as exc:
        _fail(f"{catalog / 'products.parquet'}: cannot read ({str(exc).splitlines()[0]})")
    try:
        table, intents = load_field_table(), load_intents()
    except ValueError as exc:  # a malformed row in stages/fields.toml or intents.toml; the message names it
        _fail(str(exc).splitlines()[0])
    result = category_report(products, table, intents, top=top, min_coverage=min_coverage)
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else format_report(result))


def _console():
    from rich.console import Console

    # soft_wrap: long queries and ids stay on one line, so output can be searched and piped.
    return Console(soft_wrap=True, highlight=False)


def _echo_json(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@app.command()
def inspect(
    version_dir: Annotated[Path, typer.Argument(help="A split version directory (artifacts/splits/<split>/<version>), "
                                                "<split>@<version>, or <split> for its newest version.")],
    task: Annotated[Optional[str], typer.Option("--task", help="Print the task with this id.")] = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help="Print the candidates rejected with this "
                                                  "reason code.")] = None,
    stage: Annotated[Optional[int], typer.Option("--stage", min=1, max=7, help="Print the candidates rejected "
                                                 "at this stage (1-7).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print records as JSON.")] = False,
) -> None:
    """Read a split version: one task, the rejections of a reason or stage, or (no filter) counts per intent and reason."""
    from flows.inspect import SplitReadError, load_version, render_rejections, render_summary, render_task, summary
    from validation.findings import STAGE_NAMES, STAGE_OF_REASON

    if sum(x is not None for x in (task, reason, stage)) > 1:
        _fail("give at most one of --task, --reason, --stage")
    version_dir = _version_dir(version_dir)
    try:
        version = load_version(version_dir)
    except SplitReadError as exc:
        _fail(str(exc))
    if task is not None:
        found = next((t for t in version.tasks if t["id"] == task), None)
        if found is None:
            _fail(f"no task {task!r} in {version_dir / 'tasks.jsonl'} ({len(version.tasks)} tasks; "
                  f"`ecombench inspect {version_dir}` lists counts)")
        _echo_json(found) if as_json else render_task(found, _console())
    elif reason is not None or stage is not None:
        if reason is not None and reason not in STAGE_OF_REASON:
            _fail(f"unknown reason code {reason!r}; known: {', '.join(sorted(STAGE_OF_REASON))}")
        chosen = [r for r in version.rejections
                  if (reason is None or r["reason"] == reason) and (stage is None or r["stage"] == stage)]
        title = f"reason {reason}" if reason is not None else f"stage {stage}. {STAGE_NAMES[stage]}"
        _echo_json(chosen) if as_json else render_rejections(chosen, f"{version.name} {title}", _console())
    else:
        s = summary(version)
        _echo_json(s) if as_json else render_summary(s, _console())


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="Older version as <split>@<version>, e.g. sample@v1.")],
    new: Annotated[str, typer.Argument(help="Newer version as <split>@<version>.")],
    root: Annotated[Optional[Path], typer.Option(help="Splits root directory (default artifacts/splits).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the differences as JSON.")] = False,
) -> None:
    """Compare two split versions: counts per intent and reason, tasks added, removed and changed."""
    from flows.inspect import SplitReadError, diff_versions, load_version, render_diff, resolve_version

    splits_root = root or ARTIFACTS / "splits"
    try:
        versions = [load_version(resolve_version(spec, splits_root)) for spec in (old, new)]
    except SplitReadError as exc:
        _fail(str(exc))
    d = diff_versions(*versions)
    _echo_json(d) if as_json else render_diff(d, _console())


@app.command()
def validate(
    tasks: Annotated[Path, typer.Argument(help="A tasks.jsonl (ours or an EComAgentBench release); "
                                          "never modified.")],
    catalog: Annotated[Path, typer.Option(help="Catalog snapshot directory to check the tasks against.")],
    out: Annotated[Optional[Path], typer.Option(help="Findings report (JSONL, one finding a line); default "
                                                "artifacts/findings/<split>-<version>.findings.jsonl.")] = None,
    record_format: Annotated[str, typer.Option("--format", help="Record format: auto (per record), "
                                               "ecombench or ecomagentbench.")] = "auto",
    max_answer_set: Annotated[Optional[int], typer.Option(min=1, help="Answer-set bound (default: the split "
                                                          "manifest's, else 5).")] = None,
) -> None:
    """Re-run every check on an existing split and write the findings; exit 1 when any finding is an error."""
    import polars as pl

    from flows.catalog import SnapshotError
    from flows.inspect import SplitReadError, render_validation, validate_file, validation_summary
    from flows.publish import jsonl_bytes
    from validation.validate import FORMATS

    if record_format not in FORMATS:
        _fail(f"--format {record_format!r}: use one of {', '.join(FORMATS)}")
    if out is None:
        parts = [p for p in (tasks.resolve().parent.parent.name, tasks.resolve().parent.name) if p]
        out = ARTIFACTS / "findings" / f"{'-'.join(parts) or tasks.stem}.findings.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.resolve() == tasks.resolve():
        _fail(f"--out {out} is the input file; validate never modifies its input")
    try:
        run = validate_file(tasks, catalog, record_format, max_answer_set)
    except (SplitReadError, SnapshotError) as exc:
        _fail(str(exc))
    except (OSError, pl.exceptions.PolarsError) as exc:
        _fail(f"{catalog}: cannot read the snapshot ({str(exc).splitlines()[0]})")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(jsonl_bytes(run.findings))
    except OSError as exc:
        _fail(f"{out}: cannot write findings ({exc})")
    for note in run.notes:
        typer.echo(f"warning: {note}", err=True)
    s = validation_summary(run)
    render_validation(s, _console())
    typer.echo(f"findings: {out}")
    if s["errors"]:
        raise typer.Exit(1)


def _open_split(spec: Path, catalog: Optional[Path]):
    """(SplitVersion, SandboxCatalog) for a version argument; the catalog defaults to the manifest's."""
    import flows.settings
    from flows.inspect import SplitReadError, load_version
    from sandbox.catalog import SandboxCatalog

    try:
        version = load_version(_version_dir(spec))
    except SplitReadError as exc:
        _fail(str(exc))
    path = catalog or Path(version.manifest.get("config", {}).get("catalog", ""))
    try:
        return version, SandboxCatalog.open(path, cache_dir=flows.settings.ARTIFACTS / "cache" / "sandbox")
    except FileNotFoundError as exc:
        _fail(f"{exc} (give the split's catalog with --catalog)")


@app.command("run-agent")
def run_agent(
    split: Annotated[Path, typer.Argument(help="A split version directory, or <split>@<version>.")],
    agent: Annotated[str, typer.Option(help="oracle (scripted, knows the rubrics), null (first search hit "
                                       "for the query), llm (a chat model with tool calling) or diligent "
                                       "(scripted, no rubric knowledge: asks natural questions).")] = "oracle",
    out: Annotated[Optional[Path], typer.Option(help="Trajectory file (JSONL); default artifacts/runs/"
                                                "<split>-<version>/<agent>.trajectories.jsonl.")] = None,
    catalog: Annotated[Optional[Path], typer.Option(help="Catalog snapshot (default: the one in the split's "
                                                    "manifest).")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Run only the first N tasks (by id).")] = None,
    max_tool_calls: Annotated[int, typer.Option(min=1, max=100, help="Tool calls per episode.")] = 100,
    model: Annotated[Optional[str], typer.Option(help="llm: model id (else ECOMBENCH_LLM_MODEL).")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="llm: OpenAI-compatible server URL (else "
                                                    "OPENAI_BASE_URL); the key is read from OPENAI_API_KEY.")] = None,
    temperature: Annotated[float, typer.Option(help="llm: sampling temperature.")] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="llm: tokens per reply.")] = 1024,
    timeout: Annotated[float, typer.Option(help="llm: seconds per request.")] = 120.0,
) -> None:
    """Run an agent on every task of a split in the sandbox (the paper's ten tools) and write its trajectories."""
    from sandbox.agents import AGENTS, LLMAgent
    from sandbox.tools import EpisodeLimits
    from sandbox.trajectory import agent_runner, run_episodes, write_trajectories

    if agent not in AGENTS:
        _fail(f"--agent {agent!r}: use one of {', '.join(AGENTS)}")
    llm = None
    if agent == "llm":
        from stages.llm import LLMSettings

        try:
            settings = LLMSettings.from_env(base_url=base_url, model=model, temperature=temperature,
                                            max_tokens=max_tokens, timeout=timeout)
        except ValueError as exc:
            _fail(str(exc).replace("LLM verbaliser", "LLM agent"))
        llm = LLMAgent(settings)
    version, cat = _open_split(split, catalog)
    tasks = sorted(version.tasks, key=lambda t: t["id"])[:limit]
    out = out or ARTIFACTS / "runs" / f"{version.name.replace('@', '-')}" / f"{agent}.trajectories.jsonl"
    typer.echo(f"running {agent} on {len(tasks)} tasks of {version.name} ...", err=True)

    def progress(i: int, rec: dict) -> None:
        if i % 50 == 0 or i == len(tasks):
            typer.echo(f"  {i}/{len(tasks)} episodes", err=True)

    records = run_episodes(tasks, cat, agent_runner(agent, cat, llm), EpisodeLimits(max_tool_calls=max_tool_calls),
                           progress)
    write_trajectories(out, records)
    finished = sum(r["finished"] for r in records)
    typer.echo(f"trajectories: {out}")
    typer.echo(f"  {len(records)} episodes, {finished} finished with a recommendation, "
               f"{sum(bool(r['error']) for r in records)} with errors")


@app.command()
def grade(
    trajectories: Annotated[Path, typer.Argument(help="A trajectory file written by `ecombench run-agent`.")],
    split: Annotated[Path, typer.Option(help="The split version the agent ran on (directory or <split>@<version>).")],
    catalog: Annotated[Optional[Path], typer.Option(help="Catalog snapshot (default: the split manifest's).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Metrics JSON; default <trajectories stem>.metrics.json beside "
                                                "it (with a .summary.md and per-task .graded.jsonl).")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="Model judging review opinions code cannot decide; "
                                                       "without one they stay unscored.")] = None,
    judge_base_url: Annotated[Optional[str], typer.Option(help="Judge server URL (else OPENAI_BASE_URL).")] = None,
) -> None:
    """Grade trajectories: code checkers per rubric, a judge only where code cannot decide; metrics and a summary."""
    from sandbox.grader import LLMJudge, grade as grade_all, summary_markdown
    from sandbox.trajectory import read_trajectories
    from flows.publish import jsonl_bytes

    try:
        records = read_trajectories(trajectories)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    judge = None
    if judge_model:
        from stages.llm import LLMClient, LLMSettings

        try:
            judge = LLMJudge(LLMClient(LLMSettings.from_env(base_url=judge_base_url, model=judge_model, max_tokens=256,
                                                            cache_dir=str(ARTIFACTS / "cache" / "llm"))))
        except ValueError as exc:
            _fail(str(exc).replace("LLM verbaliser", "judge"))
    version, cat = _open_split(split, catalog)
    try:
        graded, metrics = grade_all(version.tasks, records, cat, judge)
    except ValueError as exc:
        _fail(f"{trajectories}: {exc}")
    agents = sorted({r.get("agent") or "?" for r in records})
    metrics = {"split": version.name, "trajectories": str(trajectories), "agents": agents,
               "models": sorted({r["model"] for r in records if r.get("model")}), **metrics}
    stem = trajectories.name.removesuffix(".jsonl").removesuffix(".trajectories")
    out = out or trajectories.with_name(f"{stem}.metrics.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    summary = summary_markdown(metrics, f"{'/'.join(agents)} on {version.name}")
    out.with_name(f"{stem}.summary.md").write_text(summary, encoding="utf-8")
    out.with_name(f"{stem}.graded.jsonl").write_bytes(jsonl_bytes(graded))
    typer.echo(summary)
    typer.echo(f"metrics: {out}")


if __name__ == "__main__":
    app()
