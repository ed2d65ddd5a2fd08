"""`ecombench ingest`, `stats`, `verify` and `categories`: catalog snapshots, their statistics and integrity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ecombench.errors import InputError, OutputError, SettingError
from ecombench.flows.cli.app import (
    app,
    check_name,
    print_timing,
    resolve_version_dir,
    server_watched,
    shared_server,
    signals_end_the_command,
    wait_for_server,
)
from ecombench.flows.prefect_server import temporary_server
from ecombench.flows.settings import artifacts_root
from ecombench.tables.fields import load_field_table
from ecombench.tables.intents import load_intents
from ecombench.timing import phase, process_age, record


def ingest_files(meta: list[Path], reviews: list[Path], out: Path, batch_size: int, workers: int | None = None,
            reader: str = "native", vocabulary_from: Path | None = None) -> dict:
    """Check the inputs and options, then run the ingest flow.

    Raises:
        InputError: an input file is missing. SettingError: a file given with the wrong option, or
        --batch-size / --workers below 1, or an unknown --reader. OutputError: the snapshot already exists.
        SnapshotError: --vocabulary-from is no snapshot with stored statistics.
    """
    shared_server()  # before prefect is imported; it boots while the imports run
    with phase("imports (prefect, ingest)"):
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.catalog.ingest import READERS, sniff_kind
        from ecombench.flows.ingest import ingest_flow
        from ecombench.flows.preflight import check_writable

    # Check what can be checked before the flow starts, so a typo costs no Prefect start-up.
    for path, option in [*((p, "--meta") for p in meta), *((p, "--reviews") for p in reviews)]:
        if Path(path).is_dir():
            raise SettingError(f"{option} {path} is a directory; give the .jsonl or .jsonl.gz file(s) in it, "
                               f"one {option} each")
        if not Path(path).is_file():
            raise InputError(f"input file not found: {path}")
    for path, want, option in [*((p, "meta", "--meta") for p in meta), *((p, "reviews", "--reviews") for p in reviews)]:
        kind = sniff_kind(path)
        if kind is not None and kind != want:
            other = "--reviews" if option == "--meta" else "--meta"
            raise SettingError(f"{path} looks like a {kind} file but was given as {option}; pass it with {other}")
    if out.exists():
        raise OutputError(f"catalog snapshot {out} already exists; choose another --name/--out (nothing was written)")
    if batch_size < 1:
        raise SettingError(f"--batch-size must be at least 1, got {batch_size}")
    if workers is not None and workers < 1:
        raise SettingError(f"--workers must be at least 1, got {workers}")
    if reader not in READERS:
        raise SettingError(f"--reader must be one of {', '.join(READERS)}, got {reader!r}")
    if vocabulary_from is not None:
        # deferred: commands import what they run (polars) only when run: `ecombench --help` stays fast
        from ecombench.catalog.snapshot import SnapshotError, check_snapshot
        from ecombench.validation.catalog_stats import BASE_FILES, STATS_DIR

        check_snapshot(Path(vocabulary_from))
        if not all((Path(vocabulary_from) / STATS_DIR / f).is_file() for f in BASE_FILES):
            raise SnapshotError(f"--vocabulary-from {vocabulary_from}: the snapshot has no stored fact vocabulary and "
                                f"type statistics; run `ecombench stats --catalog {vocabulary_from}` first (nothing "
                                "was written)")
    check_writable(out.parent, "the catalog snapshot")
    typer.echo(f"ingesting {len(meta)} metadata and {len(reviews)} review file(s) into {out} ...", err=True)
    wait_for_server()
    try:
        with (phase("ingest flow"), signals_end_the_command(out), temporary_server(artifacts_root()) as url,
              server_watched(url)):
            return ingest_flow(meta, reviews, out, batch_size, workers, reader, vocabulary_from=vocabulary_from)
    except FileNotFoundError as exc:  # an input vanished after the check above
        raise InputError(str(exc).splitlines()[0]) from exc
    except FileExistsError as exc:  # another process wrote the snapshot meanwhile
        raise OutputError(str(exc).splitlines()[0]) from exc
    except OSError as exc:  # the disk filled up, a quota, a folder gone read-only: the partial snapshot is removed
        where = exc.filename or out
        raise OutputError(f"{where}: {exc.strerror or str(exc).splitlines()[0]} while ingesting into {out}; nothing "
                          "was published") from exc


@app.command()
def ingest(
    ctx: typer.Context,
    meta: Annotated[list[Path] | None, typer.Option("--meta", help="Metadata JSONL(.gz) file; repeat for more. "
                                                       "Default: the bundled real sample.")] = None,
    reviews: Annotated[list[Path] | None,
                       typer.Option("--reviews", help="Review JSONL(.gz) file; repeatable.")] = None,
    name: Annotated[str, typer.Option(help="Snapshot name under artifacts/catalogs/.")] = "sample",
    out: Annotated[Path | None, typer.Option(help="Snapshot directory (overrides --name).")] = None,
    batch_size: Annotated[int, typer.Option(help="Rows per parquet row group.")] = 20_000,
    workers: Annotated[int | None, typer.Option(help="Workers parsing the input (default: every CPU; threads "
                                                   "for --reader native, processes for python); the snapshot is "
                                                   "the same for any count.")] = None,
    reader: Annotated[str, typer.Option(help="How lines are parsed: native (DuckDB's JSON reader, the default) or "
                                        "python (orjson per record); the snapshot's content is the same.")] = "native",
    vocabulary_from: Annotated[Path | None, typer.Option(
        "--vocabulary-from", help="Another snapshot whose learned fact vocabulary is read beneath this one's, and "
        "whose product-type evidence and per-type statistics are pooled with this one's: a new category whose pages "
        "carry few labels is read with the values that catalog learned, its titles typed with the type nouns both "
        "use, and types both hold are judged on both catalogs' products.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Print where the time went (start-up, Prefect "
                                          "server, imports, flow) to stderr.")] = False,
) -> None:
    """Ingest Amazon Reviews 2023 files (raw or Hugging Face form, plain or .gz) into a catalog snapshot."""
    record("start-up (python, CLI imports)", process_age())
    if out is None:
        check_name(name, "--name")
    shared_server()  # before prefect is imported (ecombench.flows.ingest imports it)
    if not meta:
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.flows.ingest import sample_inputs

        if reviews:
            raise SettingError("--reviews needs the products they review: add --meta FILE (without both, the bundled "
                               "sample is used)")
        meta, reviews = sample_inputs()
    out = out or ctx.obj.artifacts / "catalogs" / name
    manifest = ingest_files(list(meta), list(reviews or []), out, batch_size, workers, reader, vocabulary_from)
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
    print_timing(verbose)


@app.command()
def stats(
    catalog: Annotated[Path, typer.Option(help="A catalog snapshot directory (`ecombench ingest`'s output).")],
) -> None:
    """Write a snapshot's statistics again (normalised text, value vocabulary, catalog suite: `<catalog>/stats/`).

    `ecombench ingest` writes them; a build reads them only while they match the snapshot's bytes and this
    code, so after an upgrade that changed their code this makes them current again without re-ingesting.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.catalog.snapshot import load_manifest
    from ecombench.validation.catalog_stats import write_catalog_stats

    load_manifest(catalog)  # a clear one-line error for a path that is not a snapshot
    record = write_catalog_stats(catalog, load_field_table())
    seconds = ", ".join(f"{k} {v:.1f} s" for k, v in record.get("seconds", {}).items())
    typer.echo(f"{catalog / 'stats'}: written ({seconds})")


@app.command()
def verify(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A catalog snapshot directory, or a split version (directory, "
                                         "<split>@<version> or <split>).")],
    catalog: Annotated[Path | None, typer.Option(help="Split only: the catalog to check it against (default: "
                                                    "the manifest's).")] = None,
) -> None:
    """Rehash a snapshot's or a split's files against their manifest (and a split's catalog against its fingerprint)."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.catalog.integrity import verify_snapshot
    from ecombench.splits.integrity import read_split_manifest, split_problems

    if (path / "manifest.json").is_file() and (path / "products.parquet").is_file():
        outcome = verify_snapshot(path)  # no cache: every file is hashed again
        for name, how in outcome.items():
            typer.echo(f"{path / name}: {'ok' if how == 'hashed' else how}")
        return
    version_dir = resolve_version_dir(path, ctx.obj.artifacts)
    problems = split_problems(version_dir, read_split_manifest(version_dir), catalog)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(problems[0] + more)
    typer.echo(f"{version_dir}: every file matches its manifest, and the catalog has the split's fingerprint")


@app.command()
def categories(
    catalog: Annotated[Path, typer.Option(help="Catalog snapshot directory.")],
    top: Annotated[int, typer.Option(min=1, help="Most frequent detail keys listed per category.")] = 20,
    min_coverage: Annotated[float, typer.Option(min=0.0, max=1.0, help="List keys missing from the field table "
                                                "from this share of a category's products.")] = 0.10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Per main_category: products, eligible products per intent, frequent detail keys.

    Also which of those keys the field table lacks.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    import polars as pl

    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.catalog.snapshot import load_snapshot
    from ecombench.stages.categories import category_report, format_report

    try:
        products, _ = load_snapshot(catalog)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"{catalog / 'products.parquet'}: cannot read ({str(exc).splitlines()[0]})") from exc
    table, intents = load_field_table(), load_intents()
    result = category_report(products, table, intents, top=top, min_coverage=min_coverage)
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else format_report(result))
