"""Where a command's time goes: named phases recorded as they finish, printed by `--verbose`.

Phases nest only by name ("flow: plan" inside the flow); the breakdown lists them in the order
they ended, with the time since the process started (Linux: from /proc; elsewhere from the
first import of this module).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

_IMPORTED = time.perf_counter()
PHASES: list[tuple[str, float]] = []


def process_age() -> float:
    """Seconds since this process started (interpreter start-up included where /proc tells it)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - _IMPORTED


def record(name: str, seconds: float) -> None:
    """Add a finished phase."""
    PHASES.append((name, seconds))


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase `name` (recorded even when it raises)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        record(name, time.perf_counter() - start)


def imported(module: str) -> bool:
    """Whether `module` is already imported in this process (its import then costs nothing here)."""
    return module in sys.modules


def breakdown(total: float | None = None) -> str:
    """The phases as aligned lines, then the total and the load average, for `--verbose`."""
    total = process_age() if total is None else total
    width = max([len(n) for n, _ in PHASES] + [24])
    lines = ["timing:"] + [f"  {name:<{width}} {secs:6.2f} s" for name, secs in PHASES]
    try:
        load = " (load average {:.2f} {:.2f} {:.2f})".format(*os.getloadavg())
    except OSError:
        load = ""
    lines.append(f"  {'total (process age)':<{width}} {total:6.2f} s{load}")
    return "\n".join(lines)
