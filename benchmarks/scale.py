"""Scale benchmark (issue 6): ingest readers, build and answer sets on generated catalogs, one run.

For each size (default 100k, 1m, 3.7m products) it generates the catalog once
(`benchmarks/scale_data.py`, reused when already there), then measures, each in its own
subprocess so that time and memory are that reader's alone:

- **ingest (stage)**: `ecombench.catalog.ingest.write_catalog_snapshot`, what `ecombench ingest` runs, with
  `--workers` processes; its throughput is the figure compared with the targets;
- **ingest (CLI)**: `ecombench ingest --meta --reviews --out` end to end, Prefect's temporary
  server start-up included (only the wall time differs from the stage);
- **naive**: `json.loads` per line into SQLite as the reference does (EComAgentBench §2.2-2.3:
  stdlib gzip, first parent_asin wins, rows of extracted columns plus the JSON blob, batches of
  5,000 / 10,000 with INSERT OR IGNORE, WAL, synchronous=NORMAL; its FTS rebuild and the
  20-reviews-per-product second pass are left out, so the baseline is if anything faster);
- **orjson parse-only**: ISA-L gunzip and `orjson.loads` of every line in one process, nothing
  kept: the practical limit of reading this JSON in Python;
- **inflate only**: ISA-L gunzip of both files, nothing parsed: the floor under any reader of these
  gzip streams (a deflate stream is inflated in order, on one core);
- **DuckDB read_json only**: DuckDB's own NDJSON reader with the snapshot's columns declared
  (`details` as `MAP(VARCHAR, JSON)`, as issue 17 measured it) writing both files to parquet on
  every core: no record rules, no normalisation, no first-wins, no bad-record log. It is the
  reader the native ingest is built on, doing only its own part;
- **build**: `ecombench build --candidates 125` over the 8 intents (1,000 candidates);
- **answer sets**: `CatalogIndex.build` on the snapshot and `answer_set` per accepted task (as
  `benchmarks/answer_sets.py`).

Each measurement records wall and CPU seconds, the peak RSS of the largest process (wait4) and
of the whole process tree (sum, sampled every 0.2 s), and the load average before and after.
Results go to `<work>/results-<size>.json` and a section of `benchmarks/RESULTS.md` (other
sections are kept). Run:

    .venv/bin/python benchmarks/scale.py --sizes 100k,1m,3.7m
    .venv/bin/python benchmarks/scale.py --sizes 100k --skip build,answers     # quick run, no build

Each step's output goes to `<work>/<size>/<step>.log` (`tail -f` it; the stage ingest prints every
500,000 lines). A size whose run finished leaves `<work>/results-<size>.json`; `--reuse-results`
then rebuilds the RESULTS.md section without measuring it again. Disk: the generated 3.7m
catalog is ~4.4 GB (kept), its snapshot ~3.3 GB plus ~8 GB of temporary part file, the naive
SQLite file ~16 GB (deleted after measuring unless `--keep`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

PY = sys.executable
ECOMBENCH = str(Path(PY).parent / "ecombench")
STEPS = ("stage", "native", "cli", "naive", "parse", "inflate", "duckdb", "build", "answers")
SECTION = "## Scale: ingest, build and answer sets on generated catalogs (issue 6)"
PREFECT_ENV = {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
               "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore"}


# ------------------------------------------------------------------------------ measuring


def _tree_rss(pid: int) -> int:
    """Sum of RSS bytes of pid and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * page
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def measure(name: str, cmd: list[str], *, env: dict | None = None, timeout: float | None = None,
            log_path: Path | None = None) -> dict:
    """Run cmd in a subprocess; wall/CPU seconds, peak RSS (largest process and tree), load, stdout.

    The child's stdout and stderr go to `log_path` (or are captured); the last stdout line that
    parses as JSON is returned as `result`. A timeout kills the process group and is recorded.
    """
    print(f"    {name}: {' '.join(cmd)}", flush=True)
    shown = " ".join(cmd)
    load_before = os.getloadavg()[0]
    out_fh = open(log_path, "w") if log_path else subprocess.PIPE
    # /usr/bin/time reports the child's own peak RSS: a child forked from this (larger) process
    # would inherit this process's high-water mark in ru_maxrss across exec.
    rss_file = Path(f"/tmp/scale-bench-rss-{os.getpid()}")
    if Path("/usr/bin/time").exists():
        cmd = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file), *cmd]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out_fh, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                            cwd=REPO, start_new_session=True, text=True)
    peak_tree = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal peak_tree
        while not stop.is_set():
            peak_tree = max(peak_tree, _tree_rss(proc.pid))
            stop.wait(0.2)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    timed_out = False
    deadline = None if timeout is None else t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.perf_counter() > deadline:
            os.killpg(proc.pid, 9)
            timed_out = True
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    stop.set()
    poller.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if log_path:
        out_fh.close()
        text = log_path.read_text(errors="replace")
    else:
        text = proc.stdout.read()
    max_rss_kb = usage.ru_maxrss
    try:
        max_rss_kb = int(rss_file.read_text().split()[-1])
        rss_file.unlink()
    except (OSError, ValueError, IndexError):
        pass
    result = None
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
    row = {"name": name, "cmd": shown, "wall_s": round(wall, 2),
           "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "max_rss_mb": round(max_rss_kb / 1024),
           "tree_rss_mb": round(peak_tree / 2**20), "load_before": round(load_before, 2),
           "load_after": round(os.getloadavg()[0], 2), "returncode": proc.returncode,
           "timed_out": timed_out, "result": result}
    if proc.returncode != 0:
        row["tail"] = text[-2000:]
        print(f"      FAILED (exit {proc.returncode}{', timed out' if timed_out else ''}): {text[-500:]}", flush=True)
    else:
        print(f"      {wall:.1f} s wall, {row['cpu_s']:.1f} s CPU, peak RSS {row['max_rss_mb']} MB "
              f"(tree {row['tree_rss_mb']} MB), load {load_before:.1f} -> {row['load_after']:.1f}", flush=True)
    return row


# ------------------------------------------------------------------------------ the readers (child side)


def same_snapshot(a: Path, b: Path) -> dict:
    """Whether two snapshots hold the same products, reviews and bad records, read a row group at a time.

    Returns:
        {"same_products", "same_reviews", "same_bad_records"}: booleans (rows compared in file order).
    """
    import pyarrow.parquet as pq

    def same_table(name: str) -> bool:
        fa, fb = pq.ParquetFile(a / name), pq.ParquetFile(b / name)
        if fa.schema_arrow != fb.schema_arrow or fa.metadata.num_rows != fb.metadata.num_rows:
            return False
        rows = 50_000
        return all(x.equals(y) for x, y in zip(fa.iter_batches(rows), fb.iter_batches(rows), strict=True))

    def same_file(name: str) -> bool:
        with open(a / name, "rb") as fa, open(b / name, "rb") as fb:
            while True:
                x, y = fa.read(1 << 20), fb.read(1 << 20)
                if x != y:
                    return False
                if not x:
                    return True

    return {"same_products": same_table("products.parquet"), "same_reviews": same_table("reviews.parquet"),
            "same_bad_records": same_file("bad_records.jsonl")}


def child_stage(meta: str, reviews: str, out: str, workers: str, reader: str = "python") -> None:
    """`write_catalog_snapshot` on one catalog with `reader` (python or native); prints the counts as JSON."""
    from ecombench.catalog.ingest import write_catalog_snapshot

    shutil.rmtree(out, ignore_errors=True)
    shown: dict[str, int] = {}
    t0 = time.perf_counter()

    def progress(name: str, lines: int) -> None:
        if lines // 500_000 > shown.get(name, 0):
            shown[name] = lines // 500_000
            print(f"{name}: {lines:,} lines, {time.perf_counter() - t0:.0f} s", flush=True)

    manifest = write_catalog_snapshot([meta], [reviews], out, workers=int(workers) if workers != "auto" else None,
                                      progress=progress, reader=reader)
    print(json.dumps(manifest["counts"]))


def child_naive(meta: str, reviews: str, db: str) -> None:
    """json.loads per line into SQLite, as the reference's build_product_index.py does (§2.2-2.3)."""
    import gzip
    import sqlite3

    for suffix in ("", "-wal", "-shm"):
        Path(db + suffix).unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("CREATE TABLE products (product_id TEXT PRIMARY KEY, title TEXT, store TEXT, brand TEXT, "
                "price REAL, average_rating REAL, rating_number INTEGER, main_category TEXT, "
                "detail_field_count INTEGER, has_features INTEGER, has_description INTEGER, has_price INTEGER, "
                "data TEXT)")
    con.execute("CREATE TABLE reviews (review_id INTEGER PRIMARY KEY AUTOINCREMENT, product_id TEXT, rating REAL, "
                "title TEXT, text TEXT, helpful_vote INTEGER DEFAULT 0, verified_purchase INTEGER, timestamp INTEGER)")
    seen: set[str] = set()
    batch: list[tuple] = []
    products = 0
    insert = "INSERT OR IGNORE INTO products VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
    with gzip.open(meta, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            pid = rec.pop("parent_asin", None)
            if not pid or pid in seen:
                continue
            seen.add(pid)
            rec.pop("bought_together", None)
            details = rec.get("details") or {}
            price = rec.get("price")
            price = price if isinstance(price, (int, float)) else None
            batch.append((pid, rec.get("title"), rec.get("store"), details.get("Brand", ""), price,
                          rec.get("average_rating"), rec.get("rating_number") or 0, rec.get("main_category"),
                          len(details), int(bool(rec.get("features"))), int(bool(rec.get("description"))),
                          int(price is not None), json.dumps(rec)))
            products += 1
            if len(batch) >= 5000:
                con.executemany(insert, batch)
                con.commit()
                batch = []
    if batch:
        con.executemany(insert, batch)
        con.commit()
    batch, n_reviews = [], 0
    insert = ("INSERT INTO reviews (product_id, rating, title, text, helpful_vote, verified_purchase, timestamp) "
              "VALUES (?,?,?,?,?,?,?)")
    with gzip.open(reviews, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            pid = rec.get("parent_asin")
            if pid not in seen:
                continue
            batch.append((pid, rec.get("rating"), rec.get("title"), rec.get("text"), rec.get("helpful_vote") or 0,
                          int(bool(rec.get("verified_purchase"))), rec.get("timestamp")))
            n_reviews += 1
            if len(batch) >= 10000:
                con.executemany(insert, batch)
                con.commit()
                batch = []
    if batch:
        con.executemany(insert, batch)
        con.commit()
    con.close()
    print(json.dumps({"products": products, "reviews": n_reviews}))


def child_parse(*paths: str) -> None:
    """ISA-L gunzip + orjson.loads of every non-blank line, single process, nothing kept."""
    import orjson
    from isal import igzip

    lines = 0
    for path in paths:
        with igzip.open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    orjson.loads(line)
                    lines += 1
    print(json.dumps({"lines": lines}))


def child_inflate(*paths: str) -> None:
    """ISA-L gunzip of every file in 16 MB reads, single process, nothing parsed or kept."""
    from isal import igzip

    size = 0
    for path in paths:
        with igzip.open(path, "rb") as fh:
            while chunk := fh.read(1 << 24):
                size += len(chunk)
    print(json.dumps({"bytes": size}))


def child_duckdb(meta: str, reviews: str, out: str) -> None:
    """DuckDB's read_json of both files (the snapshot's columns declared) to parquet, every core, nothing else."""
    import duckdb

    from ecombench.catalog.native_columns import _META_FIELDS, _REVIEW_FIELDS

    Path(out).mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:")
    con.execute(f"SET threads = {os.cpu_count() or 1}")
    con.execute("SET preserve_insertion_order = true")
    rows = {}
    for name, path, fields in (("products", meta, {**_META_FIELDS, "details": "MAP(VARCHAR, JSON)"}),
                               ("reviews", reviews, _REVIEW_FIELDS)):
        columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in fields.items()) + "}"
        target = Path(out) / f"{name}.parquet"
        con.execute(f"COPY (SELECT * FROM read_json('{path}', format = 'newline_delimited', columns = {columns}, "
                    f"maximum_object_size = 100000000)) TO '{target}' (FORMAT parquet)")
        rows[name] = con.execute(f"SELECT count(*) FROM '{target}'").fetchone()[0]
    print(json.dumps(rows))


def child_answers(snapshot: str, version_dir: str) -> None:
    """Index build and answer-set time per accepted task (as benchmarks/answer_sets.py)."""
    from ecombench.answers.index import CatalogIndex
    from ecombench.catalog.snapshot import load_reviews, load_snapshot
    from ecombench.tables.fields import load_field_table

    tasks = [json.loads(line) for line in (Path(version_dir) / "tasks.jsonl").read_text().splitlines() if line]
    products, _ = load_snapshot(Path(snapshot))
    t0 = time.perf_counter()
    index = CatalogIndex.build(products, load_field_table(), load_reviews(Path(snapshot)))
    t_index = time.perf_counter() - t0
    per_task = None
    rounds = 0
    if tasks:
        rounds = max(1, -(-100 // len(tasks)))
        t0 = time.perf_counter()
        for _ in range(rounds):
            for t in tasks:
                index.answer_set(t["rubrics"])
        per_task = (time.perf_counter() - t0) / (rounds * len(tasks))
    print(json.dumps({"tasks": len(tasks), "rounds": rounds, "index_build_s": round(t_index, 2),
                      "answer_set_ms_per_task": None if per_task is None else round(per_task * 1000, 3)}))


CHILDREN = {"_stage": child_stage, "_naive": child_naive, "_parse": child_parse, "_inflate": child_inflate,
            "_duckdb": child_duckdb, "_answers": child_answers}


# ------------------------------------------------------------------------------ the run


def machine() -> dict:
    """CPU model, cores, RAM, Python, OS: the facts printed with every result."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    except (OSError, AttributeError):
        mem_kb = 0
    return {"cpu": model, "cores": os.cpu_count(), "ram_gib": round(mem_kb / 2**20, 1),
            "python": platform.python_version(), "platform": platform.platform()}


def run_size(n: int, args, data_root: Path, work: Path) -> dict:
    from scale_data import generate, size_label

    label = size_label(n)
    print(f"== {label} ({n:,} products)", flush=True)
    gen = generate(n, data_root / label, seed=args.seed, log=lambda m: print(m, flush=True))
    meta, reviews = str(data_root / label / "meta.jsonl.gz"), str(data_root / label / "reviews.jsonl.gz")
    files = gen["files"]
    raw_bytes = files["meta.jsonl.gz"]["uncompressed_bytes"] + files["reviews.jsonl.gz"].get("uncompressed_bytes", 0)
    base = work / label
    base.mkdir(parents=True, exist_ok=True)
    snap = base / "snapshot"
    env = {**PREFECT_ENV, "PREFECT_HOME": str(work / "prefect-home")}
    row: dict = {"size": label, "products": n, "reviews": gen["reviews"], "input_gz_mb": round(
        (files["meta.jsonl.gz"]["bytes"] + files["reviews.jsonl.gz"]["bytes"]) / 1e6),
        "input_raw_mb": round(raw_bytes / 1e6), "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "workers": args.workers, "argv": args.argv, "cores": os.cpu_count(), "steps": {}}
    steps = row["steps"]
    me = [PY, str(Path(__file__).resolve())]
    if "parse" in args.steps:
        steps["parse"] = measure("orjson parse-only", [*me, "_parse", meta, reviews], log_path=base / "parse.log")
    if "inflate" in args.steps:
        steps["inflate"] = measure("inflate only", [*me, "_inflate", meta, reviews], log_path=base / "inflate.log")
    if "duckdb" in args.steps:
        scratch = base / "duckdb-read-json"
        steps["duckdb"] = measure("DuckDB read_json only", [*me, "_duckdb", meta, reviews, str(scratch)],
                                  log_path=base / "duckdb.log")
        shutil.rmtree(scratch, ignore_errors=True)
    if "stage" in args.steps:
        # Other worker counts first, each into a scratch snapshot; the first count's snapshot is
        # the one the build reads.
        for w in args.also_workers:
            scratch = base / f"snapshot-w{w}"
            steps[f"stage-w{w}"] = measure(f"ecombench ingest (stage, workers={w})",
                                           [*me, "_stage", meta, reviews, str(scratch), str(w)],
                                           log_path=base / f"stage-w{w}.log")
            shutil.rmtree(scratch, ignore_errors=True)
    if "stage" in args.steps or "build" in args.steps or "answers" in args.steps:
        steps["stage"] = measure(f"ecombench ingest (stage, workers={args.workers})",
                                 [*me, "_stage", meta, reviews, str(snap), str(args.workers)],
                                 log_path=base / "stage.log")
    if "native" in args.steps:
        # The native reader (DuckDB, ecombench.catalog.native) into a scratch snapshot; its content equals the stage's
        # (tests/catalog/test_native.py), checked here too when both ran.
        scratch = base / "snapshot-native"
        steps["native"] = measure(f"ecombench ingest (stage, native reader, workers={args.workers})",
                                  [*me, "_stage", meta, reviews, str(scratch), str(args.workers), "native"],
                                  log_path=base / "native.log")
        if steps["native"]["returncode"] == 0 and (snap / "products.parquet").is_file():
            steps["native"].update(same_snapshot(snap, scratch))
        shutil.rmtree(scratch, ignore_errors=True)
    if "cli" in args.steps:
        cli_out = base / "snapshot-cli"
        shutil.rmtree(cli_out, ignore_errors=True)
        cmd = [ECOMBENCH, "ingest", "--meta", meta, "--reviews", reviews, "--out", str(cli_out)]
        if args.workers != "auto":
            cmd += ["--workers", str(args.workers)]
        steps["cli"] = measure("ecombench ingest (CLI)", cmd, env=env, log_path=base / "cli.log")
        shutil.rmtree(cli_out, ignore_errors=True)  # the stage's snapshot serves the build
    if "naive" in args.steps:
        db = base / "naive.db"
        steps["naive"] = measure("naive json.loads -> SQLite", [*me, "_naive", meta, reviews, str(db)],
                                 log_path=base / "naive.log")
        steps["naive"]["db_mb"] = round(sum(p.stat().st_size for p in base.glob("naive.db*")) / 1e6)
        if not args.keep:
            for p in base.glob("naive.db*"):
                p.unlink()
    for key in ("stage", *(f"stage-w{w}" for w in args.also_workers), "native", "cli", "naive", "parse", "inflate",
                "duckdb"):
        if key in steps and steps[key]["returncode"] == 0:
            steps[key]["products_per_s"] = round(n / steps[key]["wall_s"])
            steps[key]["mb_per_s"] = round(raw_bytes / 1e6 / steps[key]["wall_s"], 1)
    if "build" in args.steps and steps.get("stage", {}).get("returncode") == 0:
        splits = base / "splits"
        shutil.rmtree(splits, ignore_errors=True)
        steps["build"] = measure("ecombench build (1,000 candidates)",
                                 [ECOMBENCH, "build", "--catalog", str(snap), "--split", f"scale-{label}",
                                  "--version", "v1", "--out", str(splits), "--candidates", str(args.candidates)],
                                 env=env, timeout=args.build_timeout, log_path=base / "build.log")
        version_dir = splits / f"scale-{label}" / "v1"
        if "answers" in args.steps and (version_dir / "tasks.jsonl").is_file():
            steps["answers"] = measure("answer sets", [*me, "_answers", str(snap), str(version_dir)],
                                       log_path=base / "answers.log")
            accepted = steps["answers"]["result"] or {}
            steps["build"]["accepted_tasks"] = accepted.get("tasks")
    if not args.keep:
        shutil.rmtree(snap, ignore_errors=True)
    (work / f"results-{label}.json").write_text(json.dumps(row, indent=2) + "\n")
    return row


def _fmt(step: dict | None, what: str) -> str:
    if not step:
        return "–"
    if step.get("returncode") != 0:
        return "timed out" if step.get("timed_out") else f"failed ({step.get('returncode')})"
    return {"thr": lambda s: f"{s['products_per_s']:,} /s, {s['mb_per_s']} MB/s",
            "wall": lambda s: f"{s['wall_s']:.1f} s",
            "cpu": lambda s: f"{s['cpu_s']:.1f} s",
            "rss": lambda s: f"{s['max_rss_mb']:,} MB (tree {s['tree_rss_mb']:,})",
            "load": lambda s: f"{s['load_before']:.1f}/{s['load_after']:.1f}"}[what](step)


def report(rows: list[dict], info: dict, argv: list[str]) -> str:
    """The RESULTS.md section for these rows (markdown)."""
    lines = [SECTION, "",
             f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `benchmarks/scale.py` on {info['cpu']}, "
             f"{info['cores']} cores, {info['ram_gib']} GiB, Python {info['python']}, {info['platform']}.",
             "Load is the 1-minute load average before/after each step (2 cores: above 2 means other work "
             "competed). Peak RSS: the largest process (/usr/bin/time) and, in brackets, the whole process "
             "tree (sum, sampled every 0.2 s). Throughput counts products per second and uncompressed input "
             "MB (metadata + reviews) per second of wall time.", "",
             *(f"- {r['size']}: measured {r['measured_at']} with `.venv/bin/python benchmarks/scale.py "
               f"{r.get('argv', '')}`" for r in rows), "",
             "| size | reviews | input gz / raw | reader | throughput | wall | CPU | peak RSS | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    names = [("stage", "ecombench ingest (stage, python reader)"),
             ("native", "ecombench ingest (stage, native reader)"),
             ("cli", "ecombench ingest (CLI, with Prefect)"),
             ("naive", "naive json.loads → SQLite"), ("parse", "orjson parse-only"),
             ("inflate", "ISA-L inflate only"), ("duckdb", "DuckDB read_json only (to parquet, every core)")]
    for r in rows:
        extra = [(k, f"ecombench ingest (stage, workers={k.removeprefix('stage-w')})")
                 for k in r["steps"] if k.startswith("stage-w")]
        for key, name in [*names[:1], *extra, *names[1:]]:  # stage (python), its worker counts, native, ...
            s = r["steps"].get(key)
            if not s:
                continue
            lines.append(f"| {r['size']} | {r['reviews']:,} | {r['input_gz_mb']:,} / {r['input_raw_mb']:,} MB | {name} "
                         f"| {_fmt(s, 'thr')} | {_fmt(s, 'wall')} | {_fmt(s, 'cpu')} | {_fmt(s, 'rss')} "
                         f"| {_fmt(s, 'load')} |")
    lines += ["", "Speed of the stage ingest relative to the other readers: wall-time ratio (the targets: >= 8x naive, "
              ">= 0.5x parse-only) and, in brackets, CPU-seconds ratio, which other jobs on the machine disturb less.",
              "", "| size | native (default) vs DuckDB read_json | same snapshot as the python reader "
              "| stage ingest vs naive | vs orjson parse-only | native reader vs naive "
              "| vs orjson parse-only | build, 1,000 candidates | accepted | index build | answer set per task |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        st = r["steps"]

        def ratio(a: str, b: str, st: dict = st) -> str:
            # speed of a relative to b, by wall time (the target) and by CPU seconds (robust to load)
            if st.get(a, {}).get("returncode") == 0 and st.get(b, {}).get("returncode") == 0:
                return f"{st[b]['wall_s'] / st[a]['wall_s']:.2f}x (CPU {st[b]['cpu_s'] / st[a]['cpu_s']:.2f}x)"
            return "–"

        ans = (st.get("answers") or {}).get("result") or {}
        native = st.get("native") or {}
        same = "–" if "same_products" not in native else ", ".join(
            f"{what} {'yes' if native.get(f'same_{what}') else 'NO'}"
            for what in ("products", "reviews", "bad_records"))
        lines.append(f"| {r['size']} | {ratio('native', 'duckdb')} | {same} | {ratio('stage', 'naive')} | "
                     f"{ratio('stage', 'parse')} | "
                     f"{ratio('native', 'naive')} | {ratio('native', 'parse')} | "
                     f"{_fmt(st.get('build'), 'wall')} | {(st.get('build') or {}).get('accepted_tasks', '–')} | "
                     f"{ans.get('index_build_s', '–')} s | {ans.get('answer_set_ms_per_task', '–')} ms |")
    budget = []
    for r in rows:
        st = r["steps"]
        if st.get("naive", {}).get("returncode") == 0:
            floors = [f"{name} {st[k]['wall_s']:.1f} s ({st[k]['cpu_s']:.1f} s CPU)"
                      for k, name in (("inflate", "inflate only"), ("duckdb", "DuckDB read_json only"),
                                      ("parse", "orjson parse-only")) if st.get(k, {}).get("returncode") == 0]
            budget.append(f"- {r['size']}: 8x naive means at most {st['naive']['wall_s'] / 8:.1f} s of wall time "
                          f"({st['naive']['wall_s'] / 8 * r.get('cores', 0):.1f} core-seconds on {r.get('cores', '?')} "
                          f"cores); against {', '.join(floors) or 'no floor measured'}.")
    if budget:
        lines += ["", "The 8x-naive target against what reading these files costs with nothing else done:", "",
                  *budget]
    lines += ["", "Per-step commands, logs and raw figures: `<work>/results-<size>.json` and `<work>/<size>/*.log` "
              "(`--work`, default /work/scale-data/bench).", ""]
    return "\n".join(lines)


def write_results(section: str, path: Path) -> None:
    """Replace this benchmark's section of RESULTS.md (or append it), keeping every other section."""
    text = path.read_text() if path.is_file() else "# Measured results\n"
    start = text.find(SECTION)
    if start >= 0:
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section.rstrip("\n") + "\n" + ("\n" + text[nxt + 1:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in CHILDREN:
        CHILDREN[argv[0]](*argv[1:])
        return
    from scale_data import parse_size

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k,1m,3.7m", help="comma-separated, e.g. 100k,1m,3.7m")
    parser.add_argument("--data", type=Path, default=Path("/work/scale-data/generated"),
                        help="generated catalogs root (<data>/<size>/), reused when present")
    parser.add_argument("--work", type=Path, default=Path("/work/scale-data/bench"),
                        help="snapshots, splits, SQLite files, logs and per-size JSON results")
    parser.add_argument("--skip", default="", help=f"comma-separated steps to leave out of {','.join(STEPS)}")
    parser.add_argument("--workers", default="auto",
                        help="ingest worker processes (default auto: every CPU); a list like auto,1,3 also "
                             "measures the stage ingest with the other counts (the first one feeds the build)")
    parser.add_argument("--candidates", type=int, default=125, help="build candidates per intent (8 intents)")
    parser.add_argument("--build-timeout", type=float, default=3600, help="seconds before a build is killed")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--keep", action="store_true", help="keep snapshots and SQLite files after measuring")
    parser.add_argument("--reuse-results", action="store_true",
                        help="sizes with a results-<size>.json in --work are not measured again")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "RESULTS.md",
                        help="markdown file whose scale section is (re)written; '-' prints only")
    args = parser.parse_args(argv)
    args.argv = " ".join(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if skip - set(STEPS):
        sys.exit(f"error: --skip: unknown step(s) {sorted(skip - set(STEPS))}; steps are {', '.join(STEPS)}")
    args.steps = [s for s in STEPS if s not in skip]
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError as exc:
        sys.exit(f"error: --sizes: {exc}")
    counts = [w.strip() for w in args.workers.split(",") if w.strip()]
    if not counts or any(w != "auto" and not (w.isdigit() and int(w) >= 1) for w in counts):
        sys.exit(f"error: --workers must be 'auto' or positive integers, comma-separated; got {args.workers!r}")
    args.workers, args.also_workers = counts[0], counts[1:]
    args.work.mkdir(parents=True, exist_ok=True)
    info = machine()
    print(f"machine: {info}", flush=True)
    print(f"disk free under {args.work}: {shutil.disk_usage(args.work).free / 1e9:.0f} GB", flush=True)
    from scale_data import size_label

    if {"cli", "build"} & set(args.steps):
        # Prefect's first start on a new PREFECT_HOME migrates its database (~30 s here); a
        # throwaway ingest of the bundled sample keeps that out of the measured runs.
        warm = args.work / "warmup-snapshot"
        shutil.rmtree(warm, ignore_errors=True)
        print("warming up Prefect (not measured) ...", flush=True)
        subprocess.run([ECOMBENCH, "ingest", "--out", str(warm)], cwd=REPO, capture_output=True,
                       env={**os.environ, **PREFECT_ENV, "PREFECT_HOME": str(args.work / "prefect-home")})
        shutil.rmtree(warm, ignore_errors=True)
    rows = []
    for n in sizes:
        done = args.work / f"results-{size_label(n)}.json"
        if args.reuse_results and done.is_file():
            print(f"== {size_label(n)}: reusing {done}", flush=True)
            rows.append(json.loads(done.read_text()))
            continue
        rows.append(run_size(n, args, args.data, args.work))
    section = report(rows, info, argv)
    print("\n" + section)
    if str(args.results) != "-":
        write_results(section, args.results)
        print(f"written: {args.results}")


if __name__ == "__main__":
    main()
