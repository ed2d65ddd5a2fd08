"""`ecombench report`, `inspect`, `diff` and `validate`: reading and re-checking published split versions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from ecombench.errors import InputError, OutputError, SettingError
from ecombench.flows.cli.app import (
    AllowModified,
    app,
    check_split_integrity,
    echo_json,
    resolve_version_dir,
    rich_console,
)


@app.command()
def report(
    ctx: typer.Context,
    version_dir: Annotated[Path, typer.Argument(help="A split version directory, <split>@<version>, "
                                                     "or <split> for its newest version.")],
    allow_modified: AllowModified = False,
) -> None:
    """Print a split version's report.md."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.splits.integrity import read_split_manifest

    version_dir = resolve_version_dir(version_dir, ctx.obj.artifacts)
    check_split_integrity(version_dir, read_split_manifest(version_dir), None, ctx.obj.artifacts, allow_modified)
    path = version_dir / "report.md"
    if not path.is_file():
        raise InputError(f"{path} not found: is {version_dir} a split version directory?")
    sys.stdout.write(path.read_text(encoding="utf-8"))


@app.command()
def inspect(
    ctx: typer.Context,
    version_dir: Annotated[Path, typer.Argument(help="A split version directory (artifacts/splits/<split>/<version>), "
                                                "<split>@<version>, or <split> for its newest version.")],
    task: Annotated[str | None, typer.Option("--task", help="Print the task with this id.")] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Print the candidates rejected with this "
                                                  "reason code.")] = None,
    stage: Annotated[int | None, typer.Option("--stage", min=1, max=7, help="Print the candidates rejected "
                                                 "at this stage (1-7).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print records as JSON.")] = False,
) -> None:
    """Read a split version.

    One task, the rejections of a reason or stage, or (no filter) counts per intent and reason.
    """
    # deferred: the split readers (polars) and the findings' models load only for inspect: `--help` stays fast
    from ecombench.schemas.findings import STAGE_NAMES, STAGE_OF_REASON
    from ecombench.splits.inspect import load_version, render_rejections, render_summary, render_task, summary

    if sum(x is not None for x in (task, reason, stage)) > 1:
        raise SettingError("give at most one of --task, --reason, --stage")
    version_dir = resolve_version_dir(version_dir, ctx.obj.artifacts)
    version = load_version(version_dir)
    if task is not None:
        found = next((t for t in version.tasks if t["id"] == task), None)
        if found is None:
            raise SettingError(f"no task {task!r} in {version_dir / 'tasks.jsonl'} ({len(version.tasks)} tasks; "
                               f"`ecombench inspect {version_dir}` lists counts)")
        echo_json(found) if as_json else render_task(found, rich_console())
    elif reason is not None or stage is not None:
        if reason is not None and reason not in STAGE_OF_REASON:
            raise SettingError(f"unknown reason code {reason!r}; known: {', '.join(sorted(STAGE_OF_REASON))}")
        chosen = [r for r in version.rejections
                  if (reason is None or r["reason"] == reason) and (stage is None or r["stage"] == stage)]
        title = f"reason {reason}" if stage is None else f"stage {stage}. {STAGE_NAMES[stage]}"
        echo_json(chosen) if as_json else render_rejections(chosen, f"{version.name} {title}", rich_console())
    else:
        s = summary(version)
        echo_json(s) if as_json else render_summary(s, rich_console())


@app.command()
def diff(
    ctx: typer.Context,
    old: Annotated[str, typer.Argument(help="Older version: a version directory, <split>@<version> (e.g. "
                                       "sample@v1) or <split> for its newest version.")],
    new: Annotated[str, typer.Argument(help="Newer version, in any of the same forms.")],
    root: Annotated[Path | None, typer.Option(help="Splits root directory (default artifacts/splits).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the differences as JSON.")] = False,
    allow_modified: AllowModified = False,
) -> None:
    """Compare two split versions: counts per intent and reason, tasks added, removed and changed."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.splits.inspect import diff_versions, load_version, render_diff, resolve_version

    splits_root = root or ctx.obj.artifacts / "splits"
    versions = [load_version(Path(spec) if Path(spec).is_dir() else resolve_version(spec, splits_root))
                for spec in (old, new)]
    modified = [p for v in versions
                for p in check_split_integrity(v.path, v.manifest, None, ctx.obj.artifacts, allow_modified)]
    d = diff_versions(*versions)
    if modified:
        d["allow_modified"] = modified
    echo_json(d) if as_json else render_diff(d, rich_console())


@app.command()
def validate(
    ctx: typer.Context,
    tasks: Annotated[Path, typer.Argument(help="A tasks.jsonl (ours or an EComAgentBench release), a split "
                                          "version directory, <split>@<version> or <split>; never modified.")],
    catalog: Annotated[Path | None, typer.Option(help="Catalog snapshot directory to check the tasks against.",
                                                    show_default="the split manifest's catalog")] = None,
    out: Annotated[Path | None, typer.Option(help="Findings report (JSONL, one finding a line); default "
                                                "artifacts/findings/<split>-<version>.findings.jsonl.")] = None,
    record_format: Annotated[Literal["auto", "ecombench", "ecomagentbench"],
                             typer.Option("--format", help="Record format: auto (per record), "
                                               "ecombench or ecomagentbench.")] = "auto",
    max_answer_set: Annotated[int | None, typer.Option(min=1, help="Answer-set bound (default: the split "
                                                          "manifest's, else 5).")] = None,
    allow_modified: AllowModified = False,
) -> None:
    """Re-run every check on an existing split and write the findings; exit 1 when any finding is an error."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    import polars as pl

    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.splits.inspect import render_validation, validate_file, validation_summary
    from ecombench.splits.publish import jsonl_bytes
    from ecombench.validation.validate import FORMATS

    if not tasks.is_file():
        if tasks.suffix in (".jsonl", ".json") or (len(tasks.parts) > 1 and not tasks.exists()):
            raise InputError(f"{tasks} not found")  # a file or folder named by path: no split lookup
        tasks = resolve_version_dir(tasks, ctx.obj.artifacts) / "tasks.jsonl"
    if record_format not in FORMATS:
        raise SettingError(f"--format {record_format!r}: use one of {', '.join(FORMATS)}")
    if out is None:
        parts = [p for p in (tasks.resolve().parent.parent.name, tasks.resolve().parent.name) if p]
        out = ctx.obj.artifacts / "findings" / f"{'-'.join(parts) or tasks.stem}.findings.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.resolve() == tasks.resolve():
        raise SettingError(f"--out {out} is the input file; validate never modifies its input")
    modified: list[str] = []
    manifest_path = tasks.parent / "manifest.json"
    if tasks.name == "tasks.jsonl" and manifest_path.is_file():  # one of our split versions (a peer release has none)
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.splits.integrity import read_split_manifest

        modified = check_split_integrity(tasks.parent, read_split_manifest(tasks.parent), catalog, ctx.obj.artifacts,
                                allow_modified)
    if catalog is None:
        manifest_path = tasks.parent / "manifest.json"
        recorded = (json.loads(manifest_path.read_text(encoding="utf-8")).get("config", {}).get("catalog")
                    if manifest_path.is_file() else None)
        if not recorded:
            raise SettingError(f"{tasks} has no split manifest beside it naming its catalog; give --catalog")
        catalog = Path(recorded)
    try:
        run = validate_file(tasks, catalog, record_format, max_answer_set,
                            cache_dir=ctx.obj.artifacts / "cache" / "knowledge")
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"{catalog}: cannot read the snapshot ({str(exc).splitlines()[0]})") from exc
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(jsonl_bytes([*({"severity": "warn", "reason": "allow_modified", "message": m}
                                       for m in modified), *run.findings]))
    except OSError as exc:
        raise OutputError(f"{out}: cannot write findings ({exc})") from exc
    for note in run.notes:
        typer.echo(f"warning: {note}", err=True)
    s = validation_summary(run)
    render_validation(s, rich_console())
    typer.echo(f"findings: {out}")
    if s["errors"]:
        raise typer.Exit(1)
