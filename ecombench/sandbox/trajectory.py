"""Running an agent over a split's tasks and the trajectory files it writes (one JSONL record per episode).

A record is `ecombench.sandbox.tools.Episode.record`: task id, intent, agent, model, the recommendation,
finished, counts (tool calls, ask_user, profile reads, clarification turns), the slots revealed and
at which turn (the reference never logged them, §15.23), error, and every step with its arguments and
result. Files are sorted by task id and written whole (temporary name, then rename), so an
interrupted run never leaves half a file (fixes §15.4).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ecombench.errors import InputError, SettingError
from ecombench.io import write_atomic
from ecombench.sandbox.agents import LLMAgent, run_diligent, run_null, run_oracle
from ecombench.sandbox.catalog import SandboxCatalog
from ecombench.sandbox.tools import Episode, EpisodeLimits


def agent_runner(agent: str, catalog: SandboxCatalog,
                 llm: LLMAgent | None = None) -> Callable[[Episode], dict[str, Any]]:
    """The function that plays one episode for `agent` (oracle | null | llm | diligent).

    Raises:
        SettingError: an unknown agent name, or llm without an LLMAgent.
    """
    if agent == "oracle":
        return lambda ep: run_oracle(ep, catalog.table)
    if agent == "null":
        return run_null
    if agent == "diligent":
        return lambda ep: run_diligent(ep, catalog.table)
    if agent == "llm":
        if llm is None:
            raise SettingError("agent llm needs a model and server (--model, --base-url)")
        return llm.run
    raise SettingError(f"unknown agent {agent!r}; choose oracle, null, llm or diligent")


def run_episodes(tasks: Iterable[dict[str, Any]], catalog: SandboxCatalog, play: Callable[[Episode], dict[str, Any]],
                 limits: EpisodeLimits = EpisodeLimits(),
                 progress: Callable[[int, dict[str, Any]], None] | None = None,
                 episode: Callable[[SandboxCatalog, dict[str, Any], EpisodeLimits], Episode] = Episode
                 ) -> list[dict[str, Any]]:
    """Play one episode per task (in task id order); returns the trajectory records in that order.

    `episode` makes each Episode (e.g. a ecombench.sandbox.llm_user.ShopperEpisode with the LLM shopper bound).
    """
    records = []
    for i, task in enumerate(sorted(tasks, key=lambda t: t["id"]), 1):
        records.append(play(episode(catalog, task, limits)))
        if progress is not None:
            progress(i, records[-1])
    return records


def write_trajectories(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write records as JSONL sorted by task id, whole or not at all. Returns the path."""
    return write_atomic(path, "".join(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n"
                                      for rec in sorted(records, key=lambda r: r["task_id"])))


def read_trajectories(path: Path) -> list[dict[str, Any]]:
    """Trajectory records of a JSONL file.

    Raises:
        InputError: no such file, or a line is not a JSON object with a task_id (names file and line).
    """
    if not path.is_file():
        raise InputError(f"trajectory file not found: {path}")
    out = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict) or "task_id" not in rec:
                raise InputError(f"{path}:{n}: not a trajectory record (no task_id)")
            out.append(rec)
    return out
