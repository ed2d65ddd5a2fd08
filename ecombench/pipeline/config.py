"""The build configuration: every setting that decides a split's content, and its hash (in every split manifest)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ecombench import __version__
from ecombench.errors import InputError, SettingError
from ecombench.hashing import canonical_json, sha256_hex
from ecombench.llm import LLM_OPTION_HELP, LLMSettings
from ecombench.schemas.config import SplitConfig, TypeRules
from ecombench.stages.prompts import VERBALISER_ID, prompt_sha256
from ecombench.stages.vocabulary import MIN_VALUE_SUPPORT
from ecombench.tables import tables_sha256
from ecombench.tables.intents import load_intents

CODE_VERSION = __version__
LLM_PARTS = ("query", "persona", "slots", "opinions")  # what --verbaliser llm can write (stages/verbalise_llm.py)
# Default of BuildConfig.min_query_answer_set, chosen by measurement on every shared real file (README).
MIN_QUERY_ANSWER_SET = 3
# Default of BuildConfig.min_hidden_division (benchmarks/hidden_necessity.py). An ablated oracle
# picks the first product, in search order, that satisfies the rubrics it can learn, so its expected accuracy
# is mean(|full answer set| / |answer set without the skipped source|), at most 1/k under a k-fold rule.
# On the 325-task split of main 5bb570e (every shared file) the measured accuracies were 0.5077 / 0.5415
# against expected 0.4888 / 0.5438 (the search order favours the target by up to 2 points), and 90 / 107 of
# its tasks had a hidden source that removed no product at all (ratio 1).
# What k costs on that data (benchmarks/division_sweep.py, 450 candidates per intent, stages 2-7 without the
# oracle check): k = 1 accepts 385 tasks (expected ablated accuracies 0.48 / 0.53), k = 2 302 (0.35 / 0.39);
# the full build at k = 7 (--oracle-check), the smallest k whose bound 1/7 meets the 15 %, accepts
# only 10 (measured 0.10 / 0.20): the catalog's product types (median 99 products) are too small for many
# tasks whose every hidden source divides 7-fold. The default is 2: every hidden source at least halves the
# answer set and the shared data still give 300 tasks; set 7 (--min-hidden-division 7) on a denser catalog.
MIN_HIDDEN_DIVISION = 2

class TypeRuleSettings(BaseModel):
    """The per-type rules' thresholds (ecombench.schemas.config.TypeRules; measured: benchmarks/RESULTS.md)."""

    model_config = ConfigDict(extra="forbid")

    implied_share: float = Field(
        default=TypeRules.implied_share, gt=0, le=1,
        description="A value stated by at least this share of a type's products (of those stating the field) is "
                    "implied by the type and never a requirement (value_implied_by_type).")
    min_coverage: float = Field(
        default=TypeRules.min_coverage, ge=0, le=1,
        description="A field stated by fewer than this share of a type's products is no requirement of the type "
                    "(field_rare_for_type).")
    min_products: int = Field(
        default=TypeRules.min_products, ge=1,
        description="A type's statistics decide from this many products (smaller types use their head noun's); "
                    "stage 1 samples candidates only from types whose statistics decide. In a small catalog, from "
                    "min_products_share of its products instead, at least min_products_floor.")
    min_products_share: float = Field(
        default=0.004, gt=0, le=1,
        description="In a catalog of fewer than min_products / min_products_share products, a type's statistics "
                    "decide from this share of the catalog's products (30 of 7,270 shared products is 0.4 %).")
    min_products_floor: int = Field(
        default=5, ge=1,
        description="The fewest products a type's statistics ever decide from.")
    min_in_text: float = Field(
        default=TypeRules.min_in_text, ge=0, le=1,
        description="A value whose stating products put it in their title, bullets or description less often "
                    "than this share is no requirement of the type (value_not_in_pages).")
    min_cue_in_text: float = Field(
        default=TypeRules.min_cue_in_text, ge=0, le=1,
        description="A value whose stating products put it in their title, bullets or description less often than "
                    "this share is said through a cue only where the target's own page text states it, and is "
                    "never an excluded value.")
    min_device_share: float = Field(
        default=TypeRules.min_device_share, ge=0, le=1,
        description="A type whose products name a device model in a compatibility field at least this often is a "
                    "device accessory: the device it fits is always drawn; for other types compatibility fields "
                    "follow the rules above.")
    margin_z: float = Field(
        default=TypeRules.margin_z, ge=0,
        description="The shares above are estimates from a type's products: a field counts as stated often enough "
                    "when the Wilson score lower bound of its coverage at this many standard errors reaches "
                    "min_coverage, a value as implied when the upper bound of its share reaches implied_share "
                    "(0: the shares themselves).")

    def rules(self, catalog_products: int | None = None) -> TypeRules:
        """The settings as the statistics' thresholds for a catalog of `catalog_products` products.

        min_products becomes min(min_products, max(min_products_floor, ceil(min_products_share x catalog))):
        30 for the shared data's 7,270 products, 5 for the bundled sample's 527. None: min_products as set.
        """
        settings = self.model_dump(exclude={"min_products_share", "min_products_floor"})
        if catalog_products is not None:
            scaled = max(self.min_products_floor, math.ceil(self.min_products_share * catalog_products))
            settings["min_products"] = min(self.min_products, scaled)
        return TypeRules(**settings)


class BuildConfig(BaseModel):
    """Everything that decides a split's content. Its hash goes into the manifest and every task.

    Output placement (split name, version, output root) is not part of the config: the same
    config published under two versions gives byte-identical tasks.jsonl files.
    """

    model_config = ConfigDict(extra="forbid")

    catalog: str = Field(description="Catalog snapshot directory (artifacts/catalogs/<name>).")
    intents: list[str] = Field(default_factory=lambda: list(load_intents()),
                               description="Intents to build (tables/intents.toml).")
    candidates_per_intent: int = Field(default=100, ge=1, description="Candidates sampled per intent.")
    seed: int = Field(default=0, description="Run seed; every random choice derives from it.")
    categories: list[str] | None = Field(default=None, description="Restrict to these main_category values; "
                                                                   "unset: every category.")
    max_answer_set: int = Field(default=5, ge=1, description="Reject candidates whose answer set is larger.")
    min_query_answer_set: int = Field(
        default=MIN_QUERY_ANSWER_SET, ge=1,
        description="Reject candidates whose query rubrics alone leave fewer catalog products than this "
                    "(query_pins_target, stage 4, retried with another draw), so that the persona and "
                    "clarification must narrow the choice; 1 disables the check.")
    min_hidden_answer_set: int = Field(
        default=2, ge=1,
        description="Reject candidates where the rubrics without the persona's, or without the clarification's, "
                    "leave fewer catalog products than this (persona_not_needed / clarification_not_needed, stage 4): "
                    "every hidden source must be needed; 1 disables the check.")
    min_hidden_division: int = Field(
        default=MIN_HIDDEN_DIVISION, ge=1,
        description="Each hidden source must divide the answer set at least this many times: the rubrics without "
                    "the persona's, and without the clarification's, must each leave at least this many times the "
                    "products all rubrics leave (hidden_source_too_weak, stage 4), so that an oracle skipping that "
                    "source, picking the first product that fits what it knows, is right at most 1/k of the time "
                    "; 1 disables the check.")
    min_value_support: int = Field(
        default=MIN_VALUE_SUPPORT, ge=1,
        description="An attribute value must be carried by at least this many catalog products in its field "
                    "(stages/vocabulary.py; placeholders and the product's own model are always dropped).")
    max_attempts: int = Field(default=10, ge=1, le=20, description="Split/verbalise attempts per candidate, each "
                              "drawing the features, split and text anew (on the shared data 3 attempts accept "
                              "103 of 800 candidates, 10 accept 132).")
    max_clarification_turns: int = Field(default=10, ge=1, le=10, description="Clarification turns a task allows "
                                         "an agent (its max_clarification_turns).")
    partition: SplitConfig = Field(default_factory=SplitConfig, description="Three-source split ratios and minimums.")
    type_rules: TypeRuleSettings = Field(default_factory=TypeRuleSettings,
                                         description="What a product type implies or does not take, and which "
                                                     "types are sampled (ecombench.catalog.type_stats).")
    verbaliser: Literal["template-v2", "template-v1", "template", "llm"] = Field(
        default="template-v2", description="template-v2 (offline, the default), template-v1 (the first offline "
                                           "templates, so older splits regenerate) or llm "
                                           "(an OpenAI-compatible server).")
    llm_model: str | None = Field(default=None, description=f"llm: {LLM_OPTION_HELP['model']}.")
    llm_temperature: float = Field(default=LLMSettings.temperature, ge=0, le=2,
                                   description=f"llm: {LLM_OPTION_HELP['temperature']}.")
    llm_max_tokens: int = Field(default=LLMSettings.max_tokens, ge=16,
                                description=f"llm: {LLM_OPTION_HELP['max_tokens']}.")
    llm_seed: int = Field(default=0, description="llm: seed sent with every request.")
    llm_base_url: str | None = Field(default=None, description=f"llm: {LLM_OPTION_HELP['base_url']}, never a config.")
    llm_timeout: float = Field(default=LLMSettings.timeout, gt=0, description=f"llm: {LLM_OPTION_HELP['timeout']}.")
    llm_max_retries: int = Field(default=4, ge=0, le=10, description="llm: retries after a timeout, 429 or 5xx.")
    llm_concurrency: int = Field(default=2, ge=1, le=64, description="llm: requests in flight at once.")
    llm_model_fingerprint: str | None = Field(
        default=None, description="llm: what identifies the served weights when the server cannot say (e.g. the "
                                  "GGUF's sha256; llama-cpp-python's GET /v1/models reports only the alias). Part "
                                  "of every reply's cache key with what GET /v1/models reports.")
    llm_response_format: Literal["json_schema", "json_object_schema", "json_object", "text"] = Field(
        default="json_schema", description="llm: how the reply schema is sent: json_schema (OpenAI, vLLM, "
                                                 "Ollama), json_object_schema (llama.cpp server), json_object or text.")
    oracle_check: bool = Field(default=False, description="Run the sandbox's oracle on every validated task and "
                               "reject those it cannot solve within the episode budget (oracle_failed); record "
                               "oracle and null-agent accuracy in the manifest (pipeline/agent_check.py). On the "
                               "shared real data it more than doubles a template build's time.")
    llm_parts: list[str] | None = Field(default=None, description="llm: the parts the model writes, of query, persona, "
                                        "slots, opinions; unset: all of them. The rest come from the templates.")
    judge: bool = Field(default=False, description="Stage 7 asks an LLM judge whether each source supports its "
                                                   "rubrics (needs --model / --base-url).")
    batch_size: int = Field(default=50, ge=1, description="Candidates per Prefect task.")
    resume: bool = Field(default=True, description="Reuse batches an interrupted run of the same config finished "
                                                   "(artifacts/cache/batches); false recomputes everything.")
    task_runner: Literal["threads", "dask"] = Field(default="threads", description="How batches run: threads "
                                         "(one process) or dask (prefect-dask: "
                                         "the cluster at dask_address, else a temporary local one).")
    dask_address: str | None = Field(default=None, description="dask: scheduler address, e.g. tcp://host:8786 "
                                                               "(`dask scheduler`); unset starts a local cluster. "
                                                               "On the command line it implies --task-runner dask.")
    dask_workers: int = Field(default=2, ge=1, le=256,
                              description="dask without an address: worker processes of the temporary local cluster.")
    dask_memory_limit: str | None = Field(default=None, description="dask without an address: memory limit of "
                                                                     "each local worker process (e.g. 3GB); unset: "
                                                                     "Dask's own share of the machine.")
    answer_sets: Literal["index", "partitioned"] = Field(
        default="index", description="How stages 2-7 ask catalog-wide questions (answer sets, support counts): "
                                     "index (one answer-set index of the whole catalog per process) or partitioned "
                                     "(passes over the snapshot in partitions of --partition-rows products, a "
                                     "batch's questions at once; the same answers).")
    partition_rows: int = Field(default=250_000, ge=1, description="partitioned: products per partition of the "
                                                                   "snapshot (each partition is indexed on its own).")
    partitions_kept: int | None = Field(default=None, ge=1, description="partitioned: partition indexes each "
                                        "process (this one, or each Dask worker) keeps in memory between passes "
                                        "(the least recently used is dropped and indexed again when next "
                                        "needed); unset keeps all. Fewer trade time for memory.")

    # Where and how fast things run, not what is built: left out of the config hash.
    RUNTIME: ClassVar[frozenset[str]] = frozenset({"catalog", "batch_size", "resume", "llm_base_url", "llm_timeout",
                                                   "llm_max_retries", "llm_concurrency", "task_runner",
                                                   "dask_address", "dask_workers", "dask_memory_limit", "answer_sets",
                                                   "partition_rows", "partitions_kept"})

    # Settings added after splits were published: left out of the content (and so of the config hash) while
    # unset, so an older split's hash keeps meaning the same build.
    ADDED_UNSET: ClassVar[frozenset[str]] = frozenset({"llm_model_fingerprint"})

    @field_validator("verbaliser")
    @classmethod
    def _first_templates(cls, verbaliser: str) -> str:
        # template-v1 is stored under its first name, "template", so splits built before template-v2 existed
        # keep their config hash and regenerate byte for byte
        return "template" if verbaliser == "template-v1" else verbaliser

    @field_validator("llm_parts")
    @classmethod
    def _known_parts(cls, parts: list[str] | None) -> list[str] | None:
        unknown = sorted(set(parts or ()) - set(LLM_PARTS))
        if unknown:
            raise ValueError(f"unknown LLM part(s) {unknown}; choose from {list(LLM_PARTS)}")
        return None if parts is None else [p for p in LLM_PARTS if p in parts]  # one order: one config hash

    def llm_writes(self) -> frozenset[str]:
        """The parts the LLM writes: none for the template verbaliser, llm_parts (default all) for llm."""
        if self.verbaliser != "llm":
            return frozenset()
        return frozenset(LLM_PARTS if self.llm_parts is None else self.llm_parts)

    def llm_settings(self, artifacts: Path) -> LLMSettings:
        """The LLM client settings of this build: every `llm_<name>` field is LLMSettings' `<name>`.

        The server URL and model fall back to OPENAI_BASE_URL and ECOMBENCH_LLM_MODEL, the key comes
        only from OPENAI_API_KEY; replies are cached under <artifacts>/cache/llm.

        Args:
            artifacts: the artifacts root.

        Raises:
            SettingError: no server URL or model (one line naming --base-url and --model).
        """
        passed = LLMSettings.__dataclass_fields__.keys() - {"api_key", "cache_dir"}
        params = {name.removeprefix("llm_"): value for name, value in self
                  if name.startswith("llm_") and name.removeprefix("llm_") in passed}
        return LLMSettings.from_env(**params, cache_dir=str(Path(artifacts) / "cache" / "llm"))

    def content(self) -> dict:
        """The fields that decide content: everything but where the catalog lies and runtime knobs.

        The catalog enters the hash through its fingerprint instead, so moving a snapshot does
        not change the hash; batch size, server URL, timeouts, concurrency and the task runner
        (threads or a Dask cluster) only change how and where work is scheduled (an LLM reply is
        cached by model, messages and parameters).
        """
        dump = self.model_dump(exclude=set(self.RUNTIME))
        return {k: v for k, v in dump.items() if not (k in self.ADDED_UNSET and v is None)}

    def calls_llm(self) -> bool:
        """Whether the build calls a model: the LLM verbaliser or the judge."""
        return self.verbaliser == "llm" or self.judge

    def config_hash(self, catalog_fingerprint: str) -> str:
        """sha256 of the content fields, the catalog fingerprint and the data tables' digests.

        The tables (fields, intents, cues, persona vocabulary) decide content as much as the
        config does, and users are invited to edit them, so an edit changes the hash. A build that calls
        a model also hashes the LLM verbaliser's id and the digests of its prompts and reply schemas:
        a new prompt version is a new hash, never an old hash (or a resumed batch) meaning other text.
        Template builds without the judge hash exactly what they hashed before.
        """
        content: dict[str, Any] = {"config": self.content(), "catalog": catalog_fingerprint,
                                   "tables": tables_sha256()}
        if self.calls_llm():
            content["llm"] = {"verbaliser": VERBALISER_ID, "prompts": prompt_sha256()}
        return sha256_hex(canonical_json(content))


def read_build_config(path: Path) -> dict[str, Any]:
    """The settings of a build-config file (`ecombench build --config build.json`): a JSON object of BuildConfig fields.

    Args:
        path: the JSON file.

    Returns:
        Its settings by field name (not yet validated: see `build_config`).

    Raises:
        InputError: the file cannot be read or is not JSON.
        SettingError: it is not a JSON object, or names a setting BuildConfig does not have.
    """
    try:
        settings = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read build config ({exc})") from exc
    if not isinstance(settings, dict):
        raise SettingError(f"{path}: a build config is a JSON object of settings, not a {type(settings).__name__}")
    unknown = sorted(set(settings) - set(BuildConfig.model_fields))
    if unknown:
        raise SettingError(f"{path}: unknown build setting(s) {unknown}; valid: {sorted(BuildConfig.model_fields)}")
    return settings


def build_config(settings: dict[str, Any], options: dict[str, str] | None = None) -> BuildConfig:
    """A validated BuildConfig; an invalid value becomes one SettingError line naming the setting.

    Args:
        settings: values by field name (a config file's, overridden by the command line's).
        options: for the fields the command line gave, the option the user typed (e.g.
            candidates_per_intent -> --candidates); the error names it beside the field.

    Raises:
        SettingError: "build setting <field>[ (<option>)]: <what is wrong>" for the first invalid value.

    Example:
        >>> build_config({"catalog": "c", "candidates_per_intent": 0},
        ...              {"candidates_per_intent": "--candidates"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ecombench.errors.SettingError: build setting candidates_per_intent (--candidates): Input should be ...
    """
    try:
        return BuildConfig(**settings)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        option = (options or {}).get(loc[0]) if loc else None
        where = (".".join(loc) or "partition") + (f" ({option})" if option else "")
        raise SettingError(f"build setting {where}: {err['msg']}") from exc
