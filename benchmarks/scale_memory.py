"""Where a command's memory and time go: its whole process tree's RSS sampled over time, beside its output.

Runs one command (e.g. `ecombench ingest` of a generated catalog) and every `--every` seconds records the RSS
of the process and of every descendant (the Prefect server, a spawned statistics process, worker pools), so
a peak can be laid against the phase that made it. The command's output lines are timestamped into the same
timeline. Writes `<out>.jsonl` (one sample per line: seconds, tree MB, the largest processes) and prints a
summary (wall, peak tree RSS with its processes at that moment, peak per process).

    .venv/bin/python benchmarks/scale_memory.py --out /work/bench/mem-10m -- .venv/bin/ecombench ingest
        --meta META.jsonl.gz --reviews REVIEWS.jsonl.gz --out SNAPSHOT
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil


def _tree(proc: psutil.Process) -> list[tuple[int, str, int]]:
    """(pid, short command, RSS bytes) of the process and its descendants; vanished ones skipped."""
    out = []
    try:
        members = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return out
    for p in members:
        try:
            cmd = " ".join(p.cmdline())
            out.append((p.pid, _short(cmd), p.memory_info().rss))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


def _short(cmd: str) -> str:
    if "flows.server" in cmd or "prefect" in cmd and "server" in cmd:
        return "prefect-server"
    if "multiprocessing" in cmd or "spawn_main" in cmd or "forkserver" in cmd:
        return "spawned-child"
    return cmd[:60]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="path prefix of the timeline (<out>.jsonl)")
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--kill-above-mb", type=float, default=None,
                        help="stop the command (SIGKILL to its tree) once the tree holds more: a shared host's guard")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        sys.exit("error: no command given (put it after --)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    ps = psutil.Process(proc.pid)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))
            print(f"[{lines[-1][0]:7.1f}s] {lines[-1][1]}", flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak: tuple[int, float, list] = (0, 0.0, [])
    killed = False
    per_process: dict[tuple[int, str], int] = {}
    with open(f"{args.out}.jsonl", "w") as fh:
        while proc.poll() is None:
            now = time.perf_counter() - t0
            members = _tree(ps)
            total = sum(r for _, _, r in members)
            for pid, name, rss in members:
                per_process[(pid, name)] = max(per_process.get((pid, name), 0), rss)
            if total > peak[0]:
                peak = (total, now, members)
            if args.kill_above_mb is not None and total > args.kill_above_mb * 2**20:
                print(f"[{now:7.1f}s] tree RSS {total / 2**20:.0f} MB > {args.kill_above_mb:.0f} MB: killed",
                      flush=True)
                killed = True
                for pid, _, _ in members:
                    with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            fh.write(json.dumps({"s": round(now, 2), "tree_mb": round(total / 2**20),
                                 "procs": [[pid, name, round(rss / 2**20)] for pid, name, rss in
                                           sorted(members, key=lambda m: -m[2])[:5]]}) + "\n")
            time.sleep(args.every)
    reader.join(timeout=5)
    wall = time.perf_counter() - t0
    summary = {
        "cmd": " ".join(cmd), "returncode": proc.returncode, "killed_above_cap": killed, "wall_s": round(wall, 1),
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "peak_tree_mb": round(peak[0] / 2**20), "peak_at_s": round(peak[1], 1),
        "peak_processes": [[pid, name, round(rss / 2**20)] for pid, name, rss in sorted(peak[2], key=lambda m: -m[2])],
        "peak_per_process_mb": {f"{pid} {name}": round(rss / 2**20)
                                for (pid, name), rss in sorted(per_process.items(), key=lambda kv: -kv[1])[:8]},
    }
    (Path(f"{args.out}.summary.json")).write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
