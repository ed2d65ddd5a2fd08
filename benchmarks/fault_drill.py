"""Fault drill: faults, bad input and interruptions, run on real data (the bundled sample), printed as a table.

Each case damages a copy of real records or artifacts (or stops a command the way a user, a container
or the kernel would), runs the command a user would, and compares what happened with what should: one
`error:` line naming the file, setting or server and exit 1, exit 128 + the signal's number for a
signal, nothing published half-way, or a published split. docs/failures.md lists what each case
guards. Usage:

    .venv/bin/python benchmarks/fault_drill.py            # every case (~6-10 min on 2 busy cores)
    .venv/bin/python benchmarks/fault_drill.py --quick    # without the cases that start Prefect or builds
    .venv/bin/python benchmarks/fault_drill.py --only sigterm,lost   # the cases whose name holds a word

The disk-full case mounts two small tmpfs file systems (root only); without the right to mount it fails
and says why. tests/flows/test_fault_drill.py runs the quick form.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SAMPLE = REPO / "ecombench" / "data" / "sample"
ECOMBENCH = [sys.executable, "-m", "ecombench.flows.cli"]


@dataclass
class Row:
    case: str
    expected: str
    observed: str
    passed: bool


def cli(args: list[str], art: Path, extra_env: dict[str, str] | None = None, timeout: float = 600) -> tuple[int, str]:
    """Run `ecombench` in a fresh process; (exit code, stderr+stdout)."""
    env = dict(os.environ, ECOMBENCH_ARTIFACTS=str(art), PYTHONPATH=str(REPO), **(extra_env or {}))
    env.setdefault("PREFECT_HOME", str(art / "prefect-home"))
    out = subprocess.run([*ECOMBENCH, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    return out.returncode, out.stderr + out.stdout


def one_error_line(code: int, text: str, must: str) -> tuple[str, bool]:
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    tracebacks = text.count("Traceback (most recent call last)")
    said = errors[0][:110] if errors else text[-160:]
    observed = f"exit {code}, {len(errors)} error line(s), {tracebacks} traceback(s): {said}"
    return observed, code == 1 and len(errors) == 1 and tracebacks == 0 and must in errors[0]


class Drill:
    def __init__(self, work: Path, quick: bool):
        self.work, self.quick = work, quick
        self.art = work / "art"
        self.catalog = self.art / "catalogs" / "sample"
        self.rows: list[Row] = []
        self.only: list[str] | None = None
        self.lines = gzip.open(SAMPLE / "meta.jsonl.gz", "rb").read().splitlines(keepends=True)

    def setup(self) -> None:
        from ecombench.catalog.ingest import write_catalog_snapshot
        from ecombench.pipeline.build import build_split
        from ecombench.pipeline.config import BuildConfig

        write_catalog_snapshot([SAMPLE / "meta.jsonl.gz"], [SAMPLE / "reviews.jsonl.gz"], self.catalog, workers=1)
        (self.work / "other.jsonl").write_bytes(b"".join(self.lines[:200]))
        write_catalog_snapshot([self.work / "other.jsonl"], [], self.art / "catalogs" / "other", workers=1)
        # the hidden-source quality rules off: from 30 candidates per intent they leave few tasks to edit
        self.version = build_split(BuildConfig(catalog=str(self.catalog), intents=["product_search", "rating_quality"],
                                               candidates_per_intent=30, min_hidden_answer_set=1,
                                               min_hidden_division=1, min_value_support=1), "drill",
                                  artifacts=self.art).path

    def case(self, name: str, expected: str, run: Callable[[], tuple[str, bool]]) -> None:
        if self.only and not any(word.lower() in name.lower() for word in self.only):
            return
        print(f"... {name}", file=sys.stderr, flush=True)
        t0 = time.time()
        try:
            observed, ok = run()
        except Exception as exc:  # a drill case that crashes is a failed row, not a crashed drill
            observed, ok = f"drill raised {type(exc).__name__}: {str(exc)[:120]}", False
        self.rows.append(Row(name, expected, f"{observed} [{time.time() - t0:.0f} s]", ok))

    # ---- the cases -----------------------------------------------------------------------------------

    def damaged_snapshot(self, how: str) -> tuple[str, bool]:
        copy = self.work / f"snap-{how}"
        shutil.copytree(self.catalog, copy)
        products = copy / "products.parquet"
        data = bytearray(products.read_bytes())
        if how == "flip":
            mid = len(data) // 2
            data[mid:mid + 4096] = os.urandom(4096)
        else:
            data = data[: len(data) // 2]
        products.write_bytes(bytes(data))
        return one_error_line(*cli(["build", "--catalog", str(copy), "--split", f"bad-{how}", "--candidates", "5"],
                                   self.art), "products.parquet")

    def edited_split(self) -> tuple[str, bool]:
        copy = self.work / "edited" / "drill" / "v1"
        shutil.copytree(self.version, copy)
        lines = (copy / "tasks.jsonl").read_text().splitlines()
        first = json.loads(lines[0])
        first["target_product"]["parent_asin"] = "B000000000"
        (copy / "tasks.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
        observed, ok = [], True
        for args in (["run-agent", str(copy), "--out", str(self.work / "t.jsonl")], ["report", str(copy)]):
            o, k = one_error_line(*cli(args, self.art), "tasks.jsonl")
            observed.append(f"{args[0]}: {o}")
            ok &= k
        return " | ".join(observed), ok

    def mismatched_catalog(self) -> tuple[str, bool]:
        return one_error_line(*cli(["run-agent", str(self.version), "--catalog", str(self.art / "catalogs" / "other"),
                                    "--out", str(self.work / "t2.jsonl")], self.art), "fingerprint")

    def read_only_artifacts(self) -> tuple[str, bool]:
        # The drill runs as root in CI, where chmod does not stop writes: /sys is a read-only file system.
        ro = Path("/sys/ecombench-artifacts")
        return one_error_line(*cli(["build", "--catalog", str(self.catalog), "--candidates", "5"], ro), "not writable")

    def unreachable_api(self) -> tuple[str, bool]:
        return one_error_line(*cli(["build", "--catalog", str(self.catalog), "--split", "api", "--candidates", "5"],
                                   self.art, {"PREFECT_API_URL": "http://127.0.0.1:9/api"}), "PREFECT_API_URL")

    def bad_ingest(self, content: bytes, name: str) -> tuple[str, bool]:
        path = self.work / f"{name}.jsonl"
        path.write_bytes(content)
        return one_error_line(*cli(["ingest", "--meta", str(path), "--out", str(self.work / f"snap-{name}")],
                                   self.art), str(path))

    def damaged_records(self) -> tuple[str, bool]:
        import orjson
        import polars as pl

        from ecombench.catalog.ingest import write_catalog_snapshot
        from ecombench.pipeline.build import build_split
        from ecombench.pipeline.config import BuildConfig

        lines = list(self.lines)
        damaged = {}
        for k, (field, value) in enumerate([("average_rating", 7.5), ("rating_number", -3),
                                            ("average_rating", "4.5 out of 5"), ("features", "Bluetooth 5.0")] * 5):
            obj = orjson.loads(lines[20 + 11 * k])
            obj[field] = value
            lines[20 + 11 * k] = orjson.dumps(obj) + b"\n"
            damaged[obj["parent_asin"]] = field
        path = self.work / "meta_damaged.jsonl"
        path.write_bytes(b"".join(lines))
        snap = self.work / "snap-damaged"
        manifest = write_catalog_snapshot([path], [SAMPLE / "reviews.jsonl.gz"], snap, workers=1)
        kept = set(pl.read_parquet(snap / "products.parquet", columns=["parent_asin"])["parent_asin"])
        out = build_split(BuildConfig(catalog=str(snap), intents=["product_search"], candidates_per_intent=10),
                          "damaged", root=self.work / "splits", artifacts=self.art)
        ok = set(damaged) <= kept and len(kept) == len(self.lines) and (out.path / "tasks.jsonl").is_file()
        return (f"{len(set(damaged) & kept)}/{len(damaged)} damaged products kept of {len(kept)}, bad fields "
                f"{manifest['counts']['bad_by_reason']}, published {out.path.name}"), ok

    def concurrent_builds(self) -> tuple[str, bool]:
        script = ("import sys; from pathlib import Path; from ecombench.pipeline.build import build_split; "
                  "from ecombench.pipeline.config import BuildConfig; "
                  "print(build_split(BuildConfig(catalog=sys.argv[1], intents=['product_search'], "
                  "candidates_per_intent=8), 'same', root=Path(sys.argv[2]), artifacts=Path(sys.argv[3]), "
                  "allow_empty=True).path.name)")  # the versions are the point here, not the tasks
        env = dict(os.environ, PYTHONPATH=str(REPO))
        procs = [subprocess.Popen([sys.executable, "-c", script, str(self.catalog), str(self.work / "conc"),
                                   str(self.work / f"conc-art{k}")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for k in range(2)]
        outs = [p.communicate(timeout=600) for p in procs]
        names = sorted(o.strip().splitlines()[-1] if o.strip() else "?" for o, _ in outs)
        codes = [p.returncode for p in procs]
        return f"exit codes {codes}, versions {names}", codes == [0, 0] and names == ["v1", "v2"]

    def sigint_then_rerun(self) -> tuple[str, bool]:
        art = self.work / "sig-art"
        shutil.copytree(self.catalog, art / "catalogs" / "sample")
        env = dict(os.environ, ECOMBENCH_ARTIFACTS=str(art), PYTHONPATH=str(REPO),
                   PREFECT_HOME=str(art / "prefect-home"))
        args = [*ECOMBENCH, "build", "--split", "sig", "--candidates", "40", "--batch-size", "2"]
        err = open(self.work / "sig.err", "w+")
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and "batch 3/" not in (self.work / "sig.err").read_text():
            time.sleep(0.2)
        t0 = time.time()
        os.killpg(proc.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C does
        code = proc.wait(timeout=120)
        stop_s = time.time() - t0
        text = (self.work / "sig.err").read_text()
        published = (art / "splits" / "sig").exists() and any((art / "splits" / "sig").iterdir())
        rerun = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        resumed = next((line.strip() for line in rerun.stderr.splitlines() if line.strip().startswith("resumed ")), "")
        ok = (code == 130 and not published and text.count("Traceback") == 0 and rerun.returncode == 0
              and resumed != "" and stop_s < 60)
        return (f"exit {code} after {stop_s:.1f} s, published={published}, tracebacks={text.count('Traceback')}; "
                f"rerun exit {rerun.returncode}: {resumed}"), ok

    # ---- names, numbers, integrity by content, runs ------------------------------------------------------

    def path_traversal(self) -> tuple[str, bool]:
        observed, ok = [], True
        for args, option in ((["build", "--split", "../../escaped", "--candidates", "2"], "--split"),
                             (["build", "--version", "../v9", "--candidates", "2"], "--version"),
                             (["ingest", "--name", "../../escaped"], "--name")):
            o, k = one_error_line(*cli(args, self.art), option)
            observed.append(f"{args[0]} {option}: {o[:60]}")
            ok &= k
        escaped = [p for p in (self.work / "escaped", self.work.parent / "escaped", self.art / "escaped") if p.exists()]
        return " | ".join(observed) + f"; outside the artifacts: {escaped or 'nothing'}", ok and not escaped

    def oversized_integers(self) -> tuple[str, bool]:
        import re

        from ecombench.catalog.ingest import write_catalog_snapshot

        def number(line: bytes, field: str, literal: bytes) -> bytes:
            return re.sub(rb'"%s": *-?[0-9.eE+]+' % field.encode(), b'"%s": %s' % (field.encode(), literal), line,
                          count=1)

        meta = [line.rstrip(b"\n") for line in self.lines]
        meta[3] = number(meta[3], "rating_number", b"99999999999999999999999999")
        meta[5] = number(meta[5], "rating_number", b"1e20")
        reviews = gzip.open(SAMPLE / "reviews.jsonl.gz", "rb").read().splitlines()
        reviews[0] = number(reviews[0], "helpful_vote", b"1e23")
        (self.work / "big-meta.jsonl").write_bytes(b"\n".join(meta) + b"\n")
        (self.work / "big-reviews.jsonl").write_bytes(b"\n".join(reviews) + b"\n")
        observed, ok = [], True
        for reader in ("native", "python"):
            try:
                m = write_catalog_snapshot([self.work / "big-meta.jsonl"], [self.work / "big-reviews.jsonl"],
                                           self.work / f"snap-big-{reader}", workers=1, reader=reader)
            except Exception as exc:  # the failure this case guards against
                observed.append(f"{reader}: {type(exc).__name__}: {str(exc)[:60]}")
                ok = False
                continue
            c = m["counts"]
            observed.append(f"{reader}: {c['products']} products, {c['reviews']} reviews kept, {c['bad_by_reason']}")
            ok &= (c["products"] == len(meta) and c["reviews"] == len(reviews)
                   and c["bad_by_reason"] == {"out_of_range": 3})
        return "; ".join(observed), ok

    def same_size_same_mtime(self) -> tuple[str, bool]:
        """One byte changed, size and mtime put back: the snapshot after a build cached its hash, and a split."""
        from ecombench.catalog.integrity import verify_snapshot

        def flip_keep_stat(path: Path, offset: int) -> None:
            st = path.stat()
            data = bytearray(path.read_bytes())
            data[offset] = (data[offset] + 1) % 256 if chr(data[offset]).isalnum() else data[offset]
            if bytes(data) == path.read_bytes():  # not a letter or digit there: change the next one that is
                k = next(i for i in range(offset, len(data)) if chr(data[i]).isalnum())
                data[k] = ord("x") if data[k] != ord("x") else ord("y")
            path.write_bytes(bytes(data))
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns

        snap = self.work / "snap-bitrot"
        shutil.copytree(self.catalog, snap)
        verify_snapshot(snap, self.art / "cache" / "verified")  # what a first build leaves: a remembered hash
        products = snap / "products.parquet"
        flip_keep_stat(products, products.stat().st_size // 2)
        o1, k1 = one_error_line(*cli(["build", "--catalog", str(snap), "--split", "bitrot", "--candidates", "2"],
                                     self.art), "products.parquet")
        copy = self.work / "bitrot-split" / "drill" / "v1"
        shutil.copytree(self.version, copy)
        tasks = copy / "tasks.jsonl"
        flip_keep_stat(tasks, tasks.read_text().index('"user_query": "') + 20)
        o2, k2 = one_error_line(*cli(["run-agent", str(copy), "--out", str(self.work / "bitrot.jsonl")], self.art),
                                "tasks.jsonl")
        return f"build: {o1} | run-agent: {o2}", k1 and k2

    def copied_split(self) -> tuple[str, bool]:
        """A copy of a split with the same name runs into its own folder; running again refuses to overwrite."""
        copy = self.work / "copied" / "drill" / "v1"
        shutil.copytree(self.version, copy)
        runs = self.art / "runs"
        shutil.rmtree(runs, ignore_errors=True)
        codes = [cli(["run-agent", str(path), "--limit", "3"], self.art)[0] for path in (self.version, copy)]
        files = sorted(str(p.relative_to(runs)) for p in runs.rglob("*.trajectories.jsonl"))
        again = one_error_line(*cli(["run-agent", str(self.version), "--limit", "3"], self.art), "--overwrite")
        ok = codes == [0, 0] and len(files) == 2 and again[1]
        return f"exit codes {codes}, trajectory files {files}; run again: {again[0]}", ok

    def tampered_split_graded(self) -> tuple[str, bool]:
        """A run on an edited copy (let through with --allow-modified) graded against the genuine split."""
        copy = self.work / "tampered" / "drill" / "v1"
        shutil.copytree(self.version, copy)
        lines = (copy / "tasks.jsonl").read_text().splitlines()
        first = json.loads(lines[0])
        first["user_query"] += " Anything will do."  # an edit the run plays and the genuine split lacks
        (copy / "tasks.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
        out = self.work / "tampered.trajectories.jsonl"
        code, text = cli(["run-agent", str(copy), "--allow-modified", "--limit", "3", "--out", str(out)], self.art)
        if code != 0:
            return f"run-agent on the copy failed: exit {code}: {text[-120:]}", False
        return one_error_line(*cli(["grade", str(out), "--split", str(self.version)], self.art), "sha256")

    # ---- stopping: signals, a lost server, leftovers, full disks ---------------------------------------------

    def _env(self, art: Path) -> dict[str, str]:
        return dict(os.environ, ECOMBENCH_ARTIFACTS=str(art), PYTHONPATH=str(REPO),
                    PREFECT_HOME=os.environ.get("PREFECT_HOME") or str(art / "prefect-home"))

    def _start(self, args: list[str], art: Path, name: str) -> tuple[subprocess.Popen, Path]:
        err = self.work / f"{name}.err"
        fh = open(err, "w")  # noqa: SIM115 - the child writes it
        proc = subprocess.Popen([*ECOMBENCH, *args], cwd=REPO, env=self._env(art), stdout=fh, stderr=fh,
                                start_new_session=True)
        return proc, err

    @staticmethod
    def _wait_for(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 400) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline and proc.poll() is None:
            if ready():
                return True
            time.sleep(0.05)
        return False

    def _small_build_art(self, name: str) -> Path:
        art = self.work / f"{name}-art"
        if not (art / "catalogs" / "sample").exists():
            shutil.copytree(self.catalog, art / "catalogs" / "sample")
        return art

    SMALL_BUILD = ["--intent", "product_search", "--intent", "rating_quality", "--candidates", "12",
                   "--batch-size", "2"]

    def _published(self, art: Path, split: str) -> bool:
        folder = art / "splits" / split
        return folder.exists() and any(p.name.startswith("v") for p in folder.iterdir())

    def _signal_case(self, name: str, when: Callable[[str], bool], signals: list[int], expect_code: int,
                     must: str, group: bool = True, gap: float = 0.5) -> tuple[str, bool]:
        art = self._small_build_art(name)
        proc, err = self._start(["build", "--split", name, *self.SMALL_BUILD], art, name)
        reached = self._wait_for(proc, lambda: when(err.read_text()))
        t0 = time.time()
        for k, sig in enumerate(signals):
            if k:
                time.sleep(gap)
            if proc.poll() is None:
                (os.killpg if group else os.kill)(proc.pid, sig)
        code, stop_s, text, errors = self._stopped(proc, err, t0, 180)
        published = self._published(art, name)
        ok = (reached and code == expect_code and len(errors) == 1 and must in errors[0]
              and "Traceback" not in text and not published and stop_s < 90)
        said = errors[0][:100] if errors else text[-120:]
        return (f"signal sent: {reached}; exit {code} after {stop_s:.1f} s, {len(errors)} error line(s), "
                f"{text.count('Traceback')} traceback(s), published={published}: {said}"), ok

    @staticmethod
    def _stopped(proc: subprocess.Popen, err: Path, t0: float, timeout: float) -> tuple[int, float, str, list[str]]:
        """(exit code, seconds since t0, stderr text, its "error: " lines) once `proc` ends (killed past timeout)."""
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        text = err.read_text()
        return code, time.time() - t0, text, [line for line in text.splitlines() if line.startswith("error: ")]

    def sigterm(self) -> tuple[str, bool]:
        return self._signal_case("sigterm", lambda t: "batch 2/" in t, [signal.SIGTERM], 143, "SIGTERM",
                                 group=False)

    def sigint_after_last_batch(self) -> tuple[str, bool]:
        import re

        def last_batch(text: str) -> bool:
            return any(a == b for a, b in re.findall(r"batch (\d+)/(\d+) done", text))
        return self._signal_case("lastbatch", last_batch, [signal.SIGINT], 130, "after the last batch")

    def double_sigint(self) -> tuple[str, bool]:
        # The second Ctrl-C 50 ms after the first, as an impatient user types it; a build that already stopped
        # on the first says so ("interrupted by SIGINT"), one that had not yet says "a second SIGINT".
        return self._signal_case("double", lambda t: "batch 1/" in t, [signal.SIGINT, signal.SIGINT], 130,
                                 "SIGINT", gap=0.05)

    def lost_server(self) -> tuple[str, bool]:
        art = self._small_build_art("lost")
        env = self._env(art)
        proc, err = self._start(["build", "--split", "lost", *self.SMALL_BUILD], art, "lost")
        reached = self._wait_for(proc, lambda: "batch 1/" in err.read_text())
        state = json.loads((art / "cache" / "prefect-server.json").read_text())
        t0 = time.time()
        os.kill(state["pid"], signal.SIGKILL)  # the server dies (OOM killer, a reboot of its host, a user)
        code, stop_s, text, errors = self._stopped(proc, err, t0, 300)
        published = self._published(art, "lost")
        rerun = subprocess.run([*ECOMBENCH, "build", "--split", "lost", *self.SMALL_BUILD], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=900)
        # A build that renamed its version into place just before the kill says so ("... published complete").
        truthful = not published or (bool(errors) and "published complete" in errors[0])
        ok = (reached and code == 1 and len(errors) == 1 and "Prefect server" in errors[0] and "Traceback" not in text
              and truthful and stop_s < 30 and rerun.returncode == 0)
        said = errors[0][:100] if errors else text[-120:]
        return (f"exit {code} {stop_s:.1f} s after the kill, {len(errors)} error line(s), {text.count('Traceback')} "
                f"traceback(s), {len(text.splitlines())} lines, published={published}: {said}; rerun exit "
                f"{rerun.returncode}"), ok

    def sigint_during_ingest_stats(self) -> tuple[str, bool]:
        art = self.work / "stats-art"
        target = art / "catalogs" / "statsint"

        def in_stats() -> bool:  # the snapshot's files are written (under a hidden name, or published) and stats run
            return any((p / "manifest.json").exists() for p in target.parent.glob(".statsint.staging-*")) or (
                (target / "manifest.json").exists() and not (target / "stats").exists())
        proc, err = self._start(["ingest", "--name", "statsint"], art, "statsint")
        reached = self._wait_for(proc, in_stats)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=120)
        text = err.read_text()
        errors = [line for line in text.splitlines() if line.startswith("error: ")]
        left = [p.name for p in target.parent.iterdir()] if target.parent.exists() else []
        rerun = subprocess.run([*ECOMBENCH, "ingest", "--name", "statsint"], cwd=REPO, env=self._env(art),
                               capture_output=True, text=True, timeout=600)
        ok = (reached and code == 130 and len(errors) == 1 and "Traceback" not in text and left == []
              and rerun.returncode == 0)
        return (f"signal sent in the statistics phase: {reached}; exit {code}, {len(errors)} error line(s), "
                f"{text.count('Traceback')} traceback(s), left in catalogs/: {left}; rerun exit {rerun.returncode}: "
                f"{(errors or [''])[0][:80]}"), ok

    def kill9_leftovers(self) -> tuple[str, bool]:
        art = self.work / "k9-art"
        catalogs = art / "catalogs"
        proc, err = self._start(["ingest", "--name", "k9"], art, "k9")
        def k9_temps() -> list[Path]:  # `.k9.staging-<pid>`, `..k9.staging-<pid>.partial-<pid>-…`
            return [p for p in catalogs.iterdir() if p.name.startswith(".") and ".k9." in p.name] \
                if catalogs.exists() else []
        reached = self._wait_for(proc, lambda: bool(k9_temps()))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        left_by_ingest = sorted(p.name for p in k9_temps())
        # A version folder a killed build was writing (the pid of a process that has ended).
        dead = subprocess.Popen(["true"])
        dead.wait()
        split_dir = art / "splits" / "k9"
        (split_dir / f".v1.tmp-{dead.pid}").mkdir(parents=True)
        (split_dir / f".v1.tmp-{dead.pid}" / "tasks.jsonl").write_text("{}\n")
        env = self._env(art)
        ingest = subprocess.run([*ECOMBENCH, "ingest", "--name", "k9"], cwd=REPO, env=env, capture_output=True,
                                text=True, timeout=600)
        build = subprocess.run([*ECOMBENCH, "build", "--catalog", str(catalogs / "k9"), "--split", "k9",
                                "--allow-empty", "--intent", "product_search", "--candidates", "2"], cwd=REPO,
                               env=env, capture_output=True, text=True, timeout=900)
        still = sorted(p.name for p in [*k9_temps(), *split_dir.glob(".v*.tmp-*")])
        ok = reached and bool(left_by_ingest) and ingest.returncode == 0 and build.returncode == 0 and not still
        return (f"kill -9 left {left_by_ingest} (+ a planted .v1.tmp-<dead pid>); next ingest exit "
                f"{ingest.returncode}, "
                f"build exit {build.returncode} {build.stderr.strip().splitlines()[-1:] if build.returncode else ''}; "
                f"left now: {still or 'nothing'}"), ok

    def empty_split(self) -> tuple[str, bool]:
        o, k = one_error_line(*cli(["build", "--split", "empty", "--intent", "product_search", "--candidates", "3",
                                    "--min-hidden-answer-set", "100000"], self.art), "--allow-empty")
        published = self._published(self.art, "empty")
        return f"{o}; published={published}", k and not published

    def disk_full(self) -> tuple[str, bool]:
        mounts = []
        try:
            full, small = self.work / "full-fs", self.work / "small-fs"
            for point, size in ((full, "1m"), (small, "400k")):
                point.mkdir()
                mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                                       capture_output=True, text=True)
                if mount.returncode != 0:
                    return f"cannot mount a tmpfs ({mount.stderr.strip()[:80]}): run the drill as root", False
                mounts.append(point)
            fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)  # fill it to the last byte (unbuffered)
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * 4096)
            os.close(fd)
            o1, k1 = one_error_line(*cli(["build", "--split", "full", "--candidates", "2", "--out",
                                          str(full / "splits")], self.art), "No space left")
            o2, k2 = one_error_line(*cli(["ingest", "--out", str(small / "snap")], self.art), "No space left")
            left = sorted(p.name for p in small.iterdir())
            return f"build: {o1} | ingest into 400 KB: {o2}; left: {left or 'nothing'}", k1 and k2 and not left
        finally:
            for point in mounts:
                subprocess.run(["umount", str(point)], capture_output=True)

    def run(self, only: list[str] | None = None) -> list[Row]:
        self.only = only
        self.setup()
        self.case("corrupted snapshot (4 KB flipped)", "build refused, one line naming products.parquet",
                  lambda: self.damaged_snapshot("flip"))
        self.case("corrupted snapshot (truncated)", "build refused, one line naming products.parquet",
                  lambda: self.damaged_snapshot("truncate"))
        self.case("edited split", "run-agent and report refused, one line naming tasks.jsonl", self.edited_split)
        self.case("mismatched catalog", "run-agent refused, one line naming the fingerprint", self.mismatched_catalog)
        self.case("read-only artifacts", "build refused before any work, one line 'not writable'",
                  self.read_only_artifacts)
        self.case("empty ingest", "ingest fails, one line naming the file", lambda: self.bad_ingest(b"", "empty"))
        self.case("binary ingest", "ingest fails, one line naming the file",
                  lambda: self.bad_ingest(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16, "binary"))
        self.case("out-of-range ratings + wrong-typed fields", "fields dropped and logged, products kept, published",
                  self.damaged_records)
        self.case("path traversal in names", "--split/--version/--name '../..' refused, one line, nothing outside",
                  self.path_traversal)
        self.case("oversized integers (both readers, reviews)", "ingest keeps every record, 3 fields out_of_range",
                  self.oversized_integers)
        self.case("same-size same-mtime byte change", "build (cached hash) and run-agent refused, one line each",
                  self.same_size_same_mtime)
        self.case("copied split with the same name", "two run folders; a second run refused without --overwrite",
                  self.copied_split)
        self.case("tampered split graded", "grade refuses a run of another split content, one line (sha256)",
                  self.tampered_split_graded)
        if not self.quick:
            self.case("unreachable Prefect API", "build refused, one line naming PREFECT_API_URL", self.unreachable_api)
            self.case("concurrent builds", "both publish, v1 and v2", self.concurrent_builds)
            self.case("SIGINT mid-build then rerun", "exit 130, nothing published, rerun says what it resumed",
                      self.sigint_then_rerun)
            self.case("SIGTERM mid-build", "exit 143, one line naming SIGTERM, nothing published", self.sigterm)
            self.case("Ctrl-C after the last batch", "exit 130, one line, nothing published",
                      self.sigint_after_last_batch)
            self.case("double Ctrl-C", "exit 130 at once, one non-empty line, nothing published", self.double_sigint)
            self.case("Ctrl-C during ingest statistics", "exit 130, no snapshot left, the same command then works",
                      self.sigint_during_ingest_stats)
            self.case("lost Prefect server mid-build", "exit 1 within 30 s, one line naming the server, rerun works",
                      self.lost_server)
            self.case("kill -9 leftovers", "the next ingest / build of the same target removes them",
                      self.kill9_leftovers)
            self.case("empty split", "refused unless --allow-empty, one line, nothing published", self.empty_split)
            self.case("disk full (tmpfs)", "build and ingest: one line 'No space left', nothing left behind",
                      self.disk_full)
        return self.rows


def table(rows: list[Row]) -> str:
    lines = ["| case | expected | observed | pass |", "|---|---|---|---|"]
    lines += [f"| {r.case} | {r.expected} | {r.observed.replace('|', '/')} | {'PASS' if r.passed else 'FAIL'} |"
              for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the cases that start Prefect or extra processes")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--only", default=None, help="comma-separated words: run the cases whose name holds one")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fault-drill-"))
    rows = Drill(work, args.quick).run(args.only.split(",") if args.only else None)
    print(table(rows))
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
