"""`ecombench export` and `compare`: UserSimCRS and DialogueKit formats, and rankings of graded runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ecombench.errors import InputError, OutputError, SettingError
from ecombench.flows.cli.app import AllowModified, app, check_split_integrity, resolve_version_dir
from ecombench.interop.arena.battles import load_run
from ecombench.interop.extra import require_crs_extra
from ecombench.tables.fields import load_field_table


@app.command()
def export(
    ctx: typer.Context,
    source: Annotated[Path, typer.Argument(help="usersimcrs: a split version (directory, <split>@<version> or "
                                           "<split>); dialoguekit: a trajectory file of `ecombench run-agent`.")],
    fmt: Annotated[Literal["usersimcrs", "dialoguekit"],
                   typer.Option("--format", help="usersimcrs (information needs, items, domain, interaction model, "
                                     "seed dialogues and a complete config) or dialoguekit (the run's trajectories "
                                     "as DialogueKit dialogues).")],
    out: Annotated[Path | None, typer.Option(help="Output directory (usersimcrs; default artifacts/exports/"
                                                "<split>-<version>/usersimcrs) or JSON file (dialoguekit; default "
                                                "<trajectories stem>.dialogues.json beside it).")] = None,
    split: Annotated[Path | None, typer.Option(help="dialoguekit: the split version the run used.")] = None,
    graded: Annotated[Path | None, typer.Option(help="dialoguekit: the run's grade, for the shopper's accept or "
                                                   "reject act (default <trajectories stem>.graded.jsonl beside "
                                                   "it when present; without one, the task's answer set "
                                                   "decides).")] = None,
    catalog: Annotated[Path | None, typer.Option(help="usersimcrs: catalog snapshot (default: the split "
                                                    "manifest's).")] = None,
    allow_modified: AllowModified = False,
) -> None:
    """Export a split for UserSimCRS or a run's trajectories as DialogueKit dialogues (docs/crs-formats.md)."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.splits.inspect import load_version

    require_crs_extra("ecombench export", "dialoguekit")
    if fmt == "usersimcrs":
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        import polars as pl

        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.catalog.facts import with_facts
        from ecombench.interop.usersimcrs import write_usersimcrs
        from ecombench.validation.catalog_stats import catalog_knowledge

        version = load_version(resolve_version_dir(source, ctx.obj.artifacts))
        cat = catalog or Path(version.manifest.get("config", {}).get("catalog", ""))
        # The split's files and its catalog by content, as every command that trusts them does.
        check_split_integrity(version.path, version.manifest, cat, ctx.obj.artifacts, allow_modified)
        products_path = cat / "products.parquet"
        if not products_path.is_file():
            raise InputError(f"{products_path} not found (give the split's catalog with --catalog)")
        out = out or ctx.obj.artifacts / "exports" / version.name.replace("@", "-") / "usersimcrs"
        try:
            table = load_field_table()
            # Items hold what each page states (its product facts), as the task's answer set and checkers read it.
            facts = catalog_knowledge(cat, table, ctx.obj.artifacts / "cache" / "knowledge").facts.facts
            products = with_facts(pl.read_parquet(products_path), facts).iter_rows(named=True)
            result = write_usersimcrs(version.tasks, products, table, out,
                                      name=f"ecombench-{version.name.replace('@', '-')}")
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise InputError(f"usersimcrs export to {out}: {str(exc).splitlines()[0]}") from exc
        typer.echo(f"usersimcrs export: {out}")
        typer.echo(f"  {result['information_needs']} information needs, {result['items']} items, "
                   f"{result['slots']} slots, {result['dialogues']} seed dialogues; run UserSimCRS with "
                   f"-c {(out / 'config.yaml').resolve()}")
    else:
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.interop.dialoguekit import write_dialogues
        from ecombench.sandbox.trajectory import read_trajectories

        if split is None:
            raise SettingError("--format dialoguekit needs --split (the split version the run used)")
        records = read_trajectories(source)
        version = load_version(resolve_version_dir(split, ctx.obj.artifacts))
        check_split_integrity(version.path, version.manifest, None, ctx.obj.artifacts, allow_modified)
        stem = source.name.removesuffix(".jsonl").removesuffix(".trajectories")
        graded = graded or (source.with_name(f"{stem}.graded.jsonl")
                            if source.with_name(f"{stem}.graded.jsonl").is_file() else None)
        grades = None
        if graded is not None:
            try:
                grades = load_run(graded).graded
            except FileNotFoundError as exc:
                raise InputError(f"--graded: {exc}") from None
        out = out or source.with_name(f"{stem}.dialogues.json")
        table = load_field_table()
        cat = Path(version.manifest.get("config", {}).get("catalog", ""))
        if (cat / "products.parquet").is_file():
            # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
            from ecombench.validation.catalog_stats import catalog_knowledge
            from ecombench.validation.slots import catalog_values

            # Questions are annotated with the slots they ask about as the run's `ask_user` read them: with the
            # values the catalog's labels carry.
            known = catalog_knowledge(cat, table, ctx.obj.artifacts / "cache" / "knowledge").facts
            table = table.with_catalog_values(catalog_values(known, table))
        try:
            result = write_dialogues(records, version.tasks, table, out, grades)
        except OSError as exc:
            raise OutputError(f"dialoguekit export to {out}: {str(exc).splitlines()[0]}") from exc
        typer.echo(f"dialoguekit export: {out}")
        typer.echo(f"  {result['dialogues']} dialogues, {result['utterances']} utterances, {result['tool_calls']} "
                   f"tool calls; the shopper accepts {result['accepted']} and rejects {result['rejected']} "
                   f"recommendations (from {'the grade ' + str(graded) if graded else 'the answer sets'})")


@app.command()
def compare(
    ctx: typer.Context,
    runs: Annotated[list[Path] | None, typer.Argument(help="Graded runs of one split: each a .metrics.json, "
                                                      ".graded.jsonl or .trajectories.jsonl (graded with "
                                                      "`ecombench grade`).")] = None,
    votes: Annotated[list[Path] | None, typer.Option("--votes", help="Instead of runs: a vote table (CSV with "
                                                     "columns crs1, crs2, vote: the preferred system or `tie`, as "
                                                     "CRS Arena's votes_*.csv); repeat for several, read in "
                                                     "order.")] = None,
    dedupe_votes: Annotated[bool, typer.Option(help="Drop votes that repeat an earlier row's user_id, crs1, crs2 "
                                                    "and vote (kept by default, as CRS Arena's Elo keeps them).")]
    = False,
    out: Annotated[Path | None, typer.Option(help="Output directory (default artifacts/compare/<split>/, or "
                                                "artifacts/compare/votes-<first table>/).")] = None,
    bootstrap: Annotated[int, typer.Option(min=10, help="Bootstrap replicates over tasks (votes).")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap (with sha256 of named parts).")] = 0,
    elo_k: Annotated[float, typer.Option(help="Online Elo K-factor.")] = 16.0,
) -> None:
    """Rank graded runs (per-task battles) or systems of a vote table: Bradley–Terry and Elo with intervals."""
    if bool(runs) == bool(votes):
        raise SettingError("compare takes graded runs or --votes <csv>, not both and not neither")
    require_crs_extra("ecombench compare", "choix")
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.interop.arena.report import html, markdown

    if votes:
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.interop.arena.votes import compare_votes

        result = compare_votes(votes, bootstrap, seed, elo_k, dedupe_votes)
        out = out or ctx.obj.artifacts / "compare" / f"votes-{votes[0].stem}"
    else:
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.interop.arena.report import compare_runs

        try:
            loaded = [load_run(p) for p in runs or []]
        except FileNotFoundError as exc:
            raise InputError(f"graded run not found: {exc.filename or exc}") from exc
        result = compare_runs(loaded, bootstrap, seed, elo_k)
        out = out or ctx.obj.artifacts / "compare" / str(result["split"] or "split").replace("@", "-")
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "compare.md").write_text(markdown(result), encoding="utf-8")
    (out / "compare.html").write_text(html(result), encoding="utf-8")
    ratings = result["ratings"]["runs"]
    counts = {s["name"]: s for s in result.get("systems", [])}
    for r in sorted(result["runs"], key=lambda r: ratings[r["name"]]["rank"]):
        v = ratings[r["name"]]
        if votes:
            c = counts[r["name"]]
            lead = f"{c['votes']:>3} votes  W/T/L {c['win']}/{c['tie']}/{c['loss']}"
            elo_name = "Elo (one pass)"
        else:
            lo, hi = v["accuracy_ci"]
            lead = f"accuracy {100 * v['accuracy']:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
            elo_name = "Elo"
        typer.echo(f"  {v['rank']}. {r['name']:<20} {lead}  Bradley-Terry {v['bt']:.0f} [{v['bt_ci'][0]:.0f}, "
                   f"{v['bt_ci'][1]:.0f}]  {elo_name} {v['elo']:.0f} [{v['elo_ci'][0]:.0f}, {v['elo_ci'][1]:.0f}]")
    for warning in result.get("warnings", []):
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"comparison: {out / 'compare.md'} (and compare.html, compare.json)")
