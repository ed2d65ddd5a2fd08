"""`ecombench build` options are generated from BuildConfig.

One option per field, its help and default from the model.
"""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.flows.cli.build import build_option_name
from ecombench.pipeline.config import BuildConfig

runner = CliRunner()


def _build_params() -> dict:
    return {p.name: p for p in typer.main.get_command(app).commands["build"].params}


def test_every_build_setting_is_an_option_with_the_models_help_and_default():
    params = _build_params()
    for name, field in BuildConfig.model_fields.items():
        if name == "partition":  # nested: --config only
            assert name not in params
            continue
        assert build_option_name(name) in params[name].opts, name
        assert params[name].help.startswith(field.description), name
    assert params["candidates_per_intent"].show_default == "100"
    assert params["judge"].show_default == "false" and params["llm_parts"].show_default == "unset"


def test_todays_option_names_are_kept():
    params = _build_params()
    assert {n: params[n].opts[0] for n in ("candidates_per_intent", "llm_model", "llm_base_url", "intents",
                                           "categories", "llm_parts", "max_answer_set", "oracle_check")} == {
        "candidates_per_intent": "--candidates", "llm_model": "--model", "llm_base_url": "--base-url",
        "intents": "--intent", "categories": "--category", "llm_parts": "--llm-part",
        "max_answer_set": "--max-answer-set", "oracle_check": "--oracle-check"}
    assert params["intents"].multiple and params["categories"].multiple


def test_a_bad_option_value_names_the_setting_and_the_option_typed(tmp_path):
    result = runner.invoke(app, ["build", "--catalog", str(tmp_path), "--candidates", "0"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == ("error: build setting candidates_per_intent (--candidates): "
                                                      "Input should be greater than or equal to 1")


def test_the_command_line_overrides_the_config_file(tmp_path):
    cfg = tmp_path / "build.json"
    cfg.write_text(json.dumps({"catalog": str(tmp_path / "nowhere"), "candidates_per_intent": 0}))
    result = runner.invoke(app, ["build", "--config", str(cfg), "--candidates", "5"])
    assert result.exit_code == 1
    assert "not found: is" in result.output.strip().splitlines()[-1]  # the config passed; the catalog is missing
