"""`ecombench build`: its options generated from BuildConfig, the build run as a Prefect flow, its summary."""

from __future__ import annotations

import json
from collections.abc import Callable
from inspect import Parameter, Signature, signature  # not `import inspect`: a command is named so
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Optional, Union, get_args, get_origin

import typer
from pydantic.fields import FieldInfo

from ecombench.errors import OutputError, SettingError
from ecombench.flows.cli.app import (
    app,
    check_name,
    print_timing,
    server_watched,
    shared_server,
    signal_exit_code,
    wait_for_server,
)
from ecombench.flows.cli.catalog import ingest_files
from ecombench.flows.prefect_server import temporary_server
from ecombench.pipeline.config import BuildConfig, build_config, read_build_config
from ecombench.tables.intents import load_intents
from ecombench.timing import phase, process_age, record

# BuildConfig fields whose option is not --<field-name>: today's names (repeatable lists take the singular).
BUILD_OPTION_NAMES = {"candidates_per_intent": "--candidates", "intents": "--intent", "categories": "--category",
                      "llm_model": "--model", "llm_base_url": "--base-url", "llm_parts": "--llm-part"}


BUILD_CONFIG_ONLY = frozenset({"partition"})  # a nested model: set in --config only


# The command's own fallback where BuildConfig has no default (a config must name its catalog).
BUILD_DEFAULT_SHOWN = {"catalog": "the bundled sample, ingested first if missing"}


def build_option_name(field: str) -> str:
    """The `ecombench build` option of a BuildConfig field: --<field-name>, or its name in BUILD_OPTION_NAMES."""
    return BUILD_OPTION_NAMES.get(field, "--" + field.replace("_", "-"))


def _shown_default(value: Any) -> str:
    """A default as help shows it, the same way for every option: as build.json spells it, unquoted."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _build_option(name: str, field: FieldInfo) -> Parameter:
    """The Typer option of one BuildConfig field: name, type, help and shown default all come from the field.

    Every generated option defaults to None (not given), so `--config` values are overridden only by
    options the user typed; the shown default is the field's.
    """
    kind = field.annotation
    if get_origin(kind) in (Union, UnionType):
        kind = next(a for a in get_args(kind) if a is not type(None))
    option = build_option_name(name)
    shown = BUILD_DEFAULT_SHOWN.get(name) or _shown_default(field.get_default(call_default_factory=True))
    help_text = (field.description or "") + (" Repeat for more." if get_origin(kind) is list else "")
    decls = [f"{option}/--no-{option[2:]}"] if kind is bool else [option]
    return Parameter(name, Parameter.KEYWORD_ONLY, default=None,
                     annotation=Annotated[Optional[kind], typer.Option(*decls, help=help_text, show_default=shown)])  # noqa: UP045 - a runtime type


def _with_build_config_options(command: Callable[..., None]) -> Callable[..., None]:
    """Replace the `**given` parameter of `command` by one option per BuildConfig field (Typer reads the signature)."""
    own = [p for p in signature(command, eval_str=True).parameters.values() if p.kind is not Parameter.VAR_KEYWORD]
    generated = [_build_option(n, f) for n, f in BuildConfig.model_fields.items() if n not in BUILD_CONFIG_ONLY]
    command.__signature__ = Signature(own + generated)  # type: ignore[attr-defined]
    return command


@app.command()
@_with_build_config_options
def build(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="Split name (artifacts/splits/<split>/).", show_default="sample")
                     ] = "sample",
    version: Annotated[str | None, typer.Option(help="Version name; an existing version is never overwritten.",
                                                   show_default="the next free v<N>")] = None,
    config: Annotated[Path | None, typer.Option(help="JSON file of build settings (ecombench/pipeline/config.py "
                                                   "BuildConfig); command-line options override it.",
                                                   show_default="unset")] = None,
    out: Annotated[Path | None, typer.Option(help="Splits root directory.",
                                                show_default="artifacts/splits")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Print where the time went (start-up, Prefect "
                                          "server, imports, each build step) to stderr.")] = False,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Publish the split even when every candidate "
                                              "is rejected (else that is an error and nothing is published).")
                           ] = False,
    **given: Any,
) -> None:
    """Run the seven stages over a catalog snapshot and publish a versioned split with its rejection report."""
    # `given`: one entry per BuildConfig field (options generated by _with_build_config_options), None if not typed.
    record("start-up (python, CLI imports)", process_age())
    check_name(split, "--split")
    check_name(version, "--version")
    shared_server()  # before prefect is imported; a server it starts boots while the build gets ready

    settings = read_build_config(config) if config is not None else {}
    typed = {name: value for name, value in given.items() if value is not None}
    if "dask_address" in typed:
        typed.setdefault("task_runner", "dask")
    if "catalog" in typed:
        typed["catalog"] = str(Path(typed["catalog"]))
    elif "catalog" not in settings:
        catalog = ctx.obj.artifacts / "catalogs" / "sample"
        if not (catalog / "manifest.json").exists():
            # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
            from ecombench.flows.ingest import sample_inputs

            ingest_files(*sample_inputs(), catalog, 20_000)
        settings["catalog"] = str(catalog)
    cfg = build_config({**settings, **typed}, {name: build_option_name(name) for name in typed})
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.catalog.snapshot import check_snapshot

    unknown = sorted(set(cfg.intents) - set(load_intents()))
    if unknown:
        raise SettingError(f"unknown intent(s) {unknown}; known: {sorted(load_intents())} (tables/intents.toml)")
    check_snapshot(Path(cfg.catalog))
    splits_root = out or ctx.obj.artifacts / "splits"
    if version and (splits_root / split / version).exists():
        raise OutputError(f"split version {splits_root / split / version} already exists; choose another --version "
                          "(nothing was written)")
    # deferred: the expectations worker's client (sockets, subprocess: ~15 ms) loads only for build
    from ecombench.pipeline import expectations_job

    with phase("expectations worker: find or start"):  # GX loads in another process while the build runs
        worker = expectations_job.prestart(ctx.obj.artifacts, Path(cfg.catalog))
    record(f"  (expectations worker: {worker})", 0.0)
    with phase("imports (prefect, polars, stages)"):
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.flows.build import check_dask_address, run_build
        from ecombench.flows.preflight import preflight_build
        from ecombench.pipeline.build import BuildInterrupted, stop_on_signals

    preflight_build(cfg, ctx.obj.artifacts, splits_root)
    if cfg.task_runner == "dask" and cfg.dask_address:
        check_dask_address(cfg.dask_address)  # before a Prefect server starts
    typer.echo(f"building split '{split}' from {cfg.catalog} ({len(cfg.intents)} intents x "
               f"{cfg.candidates_per_intent} candidates) ...", err=True)
    # While a server it started boots, import what publishing needs anyway.
    wait_for_server(warm=("matplotlib.figure",))
    try:
        # Signals first: a Ctrl-C while the server starts stops the build cleanly too.
        with stop_on_signals(), temporary_server(ctx.obj.artifacts) as url, server_watched(url), \
                phase("build flow (total)"):
            result = run_build(cfg, split, str(ctx.obj.artifacts), version, str(splits_root), show_progress=True,
                               allow_empty=allow_empty)
    except BuildInterrupted as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(signal_exit_code(exc.signal_name)) from None
    _print_summary(Path(result["path"]), result["manifest"])
    print_timing(verbose)


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
                   f"oracle_failed); null agent {n['correct']} of {n['tasks']} "
                   f"({'–' if n['accuracy'] is None else format(n['accuracy'], '.1%')})")
    typer.echo(f"  tasks.jsonl sha256 {manifest['files']['tasks.jsonl']['sha256']}")
    if not manifest["catalog"].get("field_table_current", True):
        typer.echo("  warning: the catalog was ingested with another tables/fields.toml; re-ingest it so changed "
                   "aliases apply", err=True)
    for intent, s in manifest["sampling"].items():
        if s["shortfall"]:
            typer.echo(f"  warning: {intent}: {s['sampled']} of {s['requested']} candidates ({s['eligible']} products "
                       f"have {s['rule']}; each product serves one intent)", err=True)
    typer.echo(f"  report: {path / 'report.md'}")
