"""`ecombench run-agent` and `ecombench grade`: agents in the sandbox, their trajectories graded by code."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import typer

from ecombench.errors import InputError, OutputError, SettingError
from ecombench.flows.cli.app import (
    AllowModified,
    BaseUrlOption,
    JudgeBaseUrlOption,
    JudgeModelOption,
    MaxTokensOption,
    ModelOption,
    TemperatureOption,
    TimeoutOption,
    UserBaseUrlOption,
    UserModelOption,
    app,
    open_split,
)
from ecombench.interop.dialogue_import import looks_like_dialogues, read_dialogue_file
from ecombench.llm import ROLE_DEFAULTS, LLMClient, LLMSettings
from ecombench.stages.prompts import prompt_sha256

AGENT, SHOPPER, JUDGE = ROLE_DEFAULTS["agent"], ROLE_DEFAULTS["shopper"], ROLE_DEFAULTS["judge"]


def split_content_id(version_dir: Path) -> str:
    """sha256 hex of a split version's tasks.jsonl as it is now: what a run played, whatever the folder's name.

    Raises:
        InputError: tasks.jsonl cannot be read.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.catalog.integrity import file_digest

    try:
        return file_digest(version_dir / "tasks.jsonl")
    except OSError as exc:
        raise InputError(f"{version_dir / 'tasks.jsonl'}: cannot read ({exc.strerror or exc})") from None


def default_run_path(version_dir: Path, name: str, split_sha256: str, agent: str, artifacts: Path) -> Path:
    """Where a run's trajectories go when --out is not given: one folder per split content.

    <artifacts>/runs/<split>-<version>/ for the split published under <artifacts>/splits; a split given
    by another path (a copy, another artifacts root) gets its tasks.jsonl's short sha256 appended, so two
    splits of the same name never share (and overwrite) a run folder.
    """
    folder = name.replace("@", "-")
    home = (artifacts / "splits").resolve()
    if not version_dir.resolve().is_relative_to(home):
        folder = f"{folder}-{split_sha256[:12]}"
    return artifacts / "runs" / folder / f"{agent}.trajectories.jsonl"


@app.command("run-agent")
def run_agent(
    ctx: typer.Context,
    split: Annotated[Path, typer.Argument(help="A split version directory, or <split>@<version>.")],
    agent: Annotated[Literal["oracle", "null", "llm", "diligent"],
                     typer.Option(help="oracle (scripted, knows the rubrics), null (first search hit "
                                       "for the query), llm (a chat model with tool calling) or diligent "
                                       "(scripted, no rubric knowledge: asks natural questions).")] = "oracle",
    out: Annotated[Path | None, typer.Option(help="Trajectory file (JSONL); default artifacts/runs/"
                                                "<split>-<version>/<agent>.trajectories.jsonl for a split under "
                                                "artifacts/splits, with the first 12 hex digits of its tasks.jsonl's "
                                                "sha256 appended to the folder for a split elsewhere.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing trajectory file (else "
                                            "that is an error).")] = False,
    catalog: Annotated[Path | None, typer.Option(help="Catalog snapshot (default: the one in the split's "
                                                    "manifest).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Run only the first N tasks (by id).")] = None,
    max_tool_calls: Annotated[int, typer.Option(min=1, max=100, help="Tool calls per episode.")] = 100,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    temperature: TemperatureOption = AGENT["temperature"],
    max_tokens: MaxTokensOption = AGENT["max_tokens"],
    timeout: TimeoutOption = AGENT["timeout"],
    tool_choice: Annotated[str, typer.Option(help="llm: the tool_choice sent (auto; 'none-sent' sends none). "
                                             "llama-cpp-python's chatml-function-calling renders the tools "
                                             "only with auto or a named function.")] = "auto",
    tool_result_role: Annotated[Literal["tool", "user"], typer.Option(
        help="llm: how tool results go back: tool (OpenAI role: tool messages) or user (a user message naming the "
             "tool; for llama-cpp-python's chatml-function-calling, which drops role: tool).")] = "tool",
    max_result_chars: Annotated[int, typer.Option(
        help="llm: the most characters of one tool result sent to the model (0: all); longer results are "
             "compacted (long texts cut first), so a 4,096-token local model holds a whole episode.")] = 0,
    user: Annotated[Literal["scripted", "llm"], typer.Option(
        help="Who answers ask_user: scripted (the slot matcher, default) or llm (a chat model checked by the "
             "leakage rules; a server that does not answer is an error; docs/crs-formats.md).")] = "scripted",
    user_model: UserModelOption = None,
    user_base_url: UserBaseUrlOption = None,
    allow_modified: AllowModified = False,
) -> None:
    """Run an agent on every task of a split in the sandbox (the paper's ten tools) and write its trajectories."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.sandbox.agents import AGENTS, LLMAgent
    from ecombench.sandbox.tools import EpisodeLimits
    from ecombench.sandbox.trajectory import agent_runner, run_episodes, write_trajectories

    if agent not in AGENTS:
        raise SettingError(f"--agent {agent!r}: use one of {', '.join(AGENTS)}")
    llm = None
    if agent == "llm":
        llm = LLMAgent(LLMSettings.from_env("the LLM agent", base_url=base_url, model=model, temperature=temperature,
                                            max_tokens=max_tokens, timeout=timeout,
                                            tool_choice=None if tool_choice == "none-sent" else tool_choice,
                                            tool_result_role=tool_result_role,
                                            tool_result_chars=max_result_chars))
    if user not in ("scripted", "llm"):
        raise SettingError(f"--user {user!r}: use scripted or llm")
    shopper_settings = None
    if user == "llm":
        shopper_settings = LLMSettings.from_env("--user llm", ("--user-base-url", "--user-model"),
                                                base_url=user_base_url, model=user_model, **SHOPPER,
                                                cache_dir=str(ctx.obj.artifacts / "cache" / "llm"))
    version, cat, modified = open_split(split, catalog, ctx.obj.artifacts, allow_modified)
    tasks = sorted(version.tasks, key=lambda t: t["id"])[:limit]
    split_sha256 = split_content_id(version.path)
    out = out or default_run_path(version.path, version.name, split_sha256, agent, ctx.obj.artifacts)
    if out.exists() and not overwrite:
        raise OutputError(f"trajectory file {out} already exists; pass --overwrite to replace it or --out for "
                          "another file (nothing was run)")
    typer.echo(f"running {agent} on {len(tasks)} tasks of {version.name} ...", err=True)

    def progress(i: int, rec: dict) -> None:
        if i % 50 == 0 or i == len(tasks):
            typer.echo(f"  {i}/{len(tasks)} episodes", err=True)

    make_episode = None
    if shopper_settings is not None:
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.sandbox.llm_user import LLMShopper, ShopperEpisode

        shopper = LLMShopper(LLMClient(shopper_settings), cat.table)
        shopper.check_server()  # a dead server is one error line now, not a scripted run labelled llm
        make_episode = lambda c, t, lim: ShopperEpisode(c, t, lim, shopper)  # noqa: E731
    records = run_episodes(tasks, cat, agent_runner(agent, cat, llm), EpisodeLimits(max_tool_calls=max_tool_calls),
                           progress, **({"episode": make_episode} if make_episode else {}))
    # Which split content the run played, so `grade` refuses another split (a copy, an edited one) of the same name.
    records = [dict(r, split_sha256=split_sha256) for r in records]
    if modified:  # recorded in every trajectory, so a grade of them carries it on
        records = [dict(r, allow_modified=modified) for r in records]
    write_trajectories(out, records)
    finished = sum(r["finished"] for r in records)
    typer.echo(f"trajectories: {out}")
    typer.echo(f"  {len(records)} episodes, {finished} finished with a recommendation, "
               f"{sum(bool(r['error']) for r in records)} with errors")
    turns = [t for r in records for t in r.get("shopper_turns") or []]
    if turns:
        fell_back = Counter(t["fallback"] for t in turns if t["fallback"])
        typer.echo(f"  LLM shopper: {len(turns) - sum(fell_back.values())} of {len(turns)} turns answered by the "
                   f"model; scripted reply instead for {fell_back['leak']} leaking and {fell_back['call_failed']} "
                   "invalid replies")


@app.command()
def grade(
    ctx: typer.Context,
    trajectories: Annotated[Path, typer.Argument(help="A trajectory file written by `ecombench run-agent` (JSONL), or "
                                                 "a dialogue file (JSON: DialogueKit, UserSimCRS or CRSArena-Dial "
                                                 "dialogues that name their task; docs/crs-formats.md).")],
    split: Annotated[Path, typer.Option(help="The split version the agent ran on (directory or <split>@<version>).")],
    catalog: Annotated[Path | None, typer.Option(help="Catalog snapshot (default: the split manifest's).")] = None,
    out: Annotated[Path | None, typer.Option(help="Metrics JSON; default <trajectories stem>.metrics.json beside "
                                                "it (with a .summary.md and per-task .graded.jsonl).")] = None,
    agent: Annotated[str | None, typer.Option(help="Dialogue files: grade this agent's dialogues (needed when the "
                                                 "file holds several agents').")] = None,
    judge_model: JudgeModelOption = None,
    judge_base_url: JudgeBaseUrlOption = None,
    allow_modified: AllowModified = False,
) -> None:
    """Grade trajectories: code checkers per rubric, a judge only where code cannot decide; metrics and a summary."""
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.sandbox.grader import LLMJudge, summary_markdown
    from ecombench.sandbox.grader import grade as grade_all
    from ecombench.sandbox.trajectory import read_trajectories
    from ecombench.splits.integrity import ALLOW_HINT
    from ecombench.splits.publish import jsonl_bytes

    dialogues = looks_like_dialogues(trajectories)
    if not dialogues:
        if agent is not None:
            raise SettingError("--agent selects dialogues of a dialogue file; a trajectory file holds one run")
        records = read_trajectories(trajectories)
    judge = None
    if judge_model:
        judge = LLMJudge(LLMClient(LLMSettings.from_env("the judge", ("--judge-base-url", "--judge-model"),
                                                        base_url=judge_base_url, model=judge_model, **JUDGE,
                                                        cache_dir=str(ctx.obj.artifacts / "cache" / "llm"))))
    version, cat, modified = open_split(split, catalog, ctx.obj.artifacts, allow_modified)
    played = sorted({r["split_sha256"] for r in records if r.get("split_sha256")}) if not dialogues else []
    here = split_content_id(version.path)
    if played and played != [here]:
        problem = (f"{trajectories}: the run played a split whose tasks.jsonl has sha256 {played[0][:12]}…, not "
                   f"{version.path / 'tasks.jsonl'} ({here[:12]}…): grade a run with the split it ran on")
        if not allow_modified:
            raise InputError(f"{problem}; {ALLOW_HINT}")
        typer.echo(f"warning: {problem} (--allow-modified)", err=True)
        modified = [*modified, problem]
    if dialogues:
        records = read_dialogue_file(trajectories, {a: r.get("title") or "" for a, r in cat.rows.items()}, agent)
    modified += sorted({m for r in records for m in r.get("allow_modified") or []} - set(modified))
    try:
        graded, metrics = grade_all(version.tasks, records, cat, judge)
    except InputError as exc:  # the grader names the task; the file is known here
        raise InputError(f"{trajectories}: {exc}") from exc
    agents = sorted({r.get("agent") or "?" for r in records})
    metrics = {"split": version.name, "split_sha256": here, "trajectories": str(trajectories), "agents": agents,
               "models": sorted({r["model"] for r in records if r.get("model")}), **metrics}
    imported = [r["imported_from"] for r in records if r.get("imported_from")]
    if imported:  # dialogues of another system: how each recommendation was found
        found = Counter(str(i["recommendation_from"]) for i in imported)
        metrics["imported"] = {"dialogues": len(imported), "recommendation_from": dict(sorted(found.items()))}
    if modified:
        metrics["allow_modified"] = modified
    if judge is not None:  # which judge decided the rubrics marked by: judge
        metrics["judge"] = {"model": judge.client.settings.model, "prompt_sha256": prompt_sha256(["review_judge"])}
    stem = (trajectories.name.removesuffix(".json") if dialogues
            else trajectories.name.removesuffix(".jsonl").removesuffix(".trajectories"))
    out = out or trajectories.with_name(f"{stem}.metrics.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    summary = summary_markdown(metrics, f"{'/'.join(agents)} on {version.name}")
    out.with_name(f"{stem}.summary.md").write_text(summary, encoding="utf-8")
    out.with_name(f"{stem}.graded.jsonl").write_bytes(jsonl_bytes(graded))
    typer.echo(summary)
    typer.echo(f"metrics: {out}")
