"""User mistakes on the command line end in one `error:` line and exit 1, with nothing written."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.flows.ingest import sample_inputs
from ecombench.pipeline.build import NoCandidates, plan_build
from ecombench.pipeline.config import BuildConfig

runner = CliRunner()


def _error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ")
    return lines[-1]


def test_a_review_file_given_as_metadata_is_refused(tmp_path):
    _, (reviews,) = sample_inputs()
    line = _error_line(runner.invoke(app, ["ingest", "--meta", str(reviews), "--out", str(tmp_path / "c")]))
    assert "looks like a reviews file but was given as --meta" in line
    assert not (tmp_path / "c").exists()


def test_a_metadata_file_given_as_reviews_is_refused(tmp_path):
    (meta,), _ = sample_inputs()
    line = _error_line(runner.invoke(app, ["ingest", "--meta", str(meta), "--reviews", str(meta),
                                           "--out", str(tmp_path / "c")]))
    assert "looks like a meta file but was given as --reviews" in line


def test_an_unknown_reader_is_refused_before_anything_is_written(tmp_path):
    (meta,), _ = sample_inputs()
    line = _error_line(runner.invoke(app, ["ingest", "--meta", str(meta), "--reader", "fast",
                                           "--out", str(tmp_path / "c")]))
    assert "--reader must be one of python, native" in line
    assert not (tmp_path / "c").exists()


def test_reviews_without_metadata_are_refused(tmp_path):
    _, (reviews,) = sample_inputs()
    line = _error_line(runner.invoke(app, ["ingest", "--reviews", str(reviews), "--out", str(tmp_path / "c")]))
    assert "--reviews needs the products they review" in line


@pytest.mark.parametrize(("content", "expected"), [
    ("[1, 2]", "a build config is a JSON object of settings, not a list"),
    ('{"candidates": 3}', "unknown build setting(s) ['candidates']; valid: ["),
    ('{"catalog": "x", "partition": {"persona_ratio": 0.5}}', "build setting partition"),
])
def test_a_bad_build_config_names_the_problem(tmp_path, content, expected):
    cfg = tmp_path / "build.json"
    cfg.write_text(content)
    assert expected in _error_line(runner.invoke(app, ["build", "--config", str(cfg)]))


def test_a_category_with_no_products_builds_nothing(sample_catalog, artifacts):
    with pytest.raises(NoCandidates, match=r"no product of the catalog is eligible for any intent .*No Such Category"):
        plan_build(BuildConfig(min_hidden_division=1,
                               catalog=str(sample_catalog.path), categories=["No Such Category"]), artifacts)


def test_debug_shows_the_user_error_with_its_traceback(tmp_path):
    from ecombench.errors import SettingError

    _, (reviews,) = sample_inputs()
    result = runner.invoke(app, ["--debug", "ingest", "--reviews", str(reviews), "--out", str(tmp_path / "c")])
    assert result.exit_code == 1 and isinstance(result.exception, SettingError)
    assert "error: " not in result.output


def test_a_bug_is_not_dressed_as_a_user_error(tmp_path, monkeypatch):
    def broken():
        raise ValueError("a programming bug")

    monkeypatch.setattr("ecombench.flows.ingest.sample_inputs", broken)
    result = runner.invoke(app, ["ingest", "--out", str(tmp_path / "c")])
    assert isinstance(result.exception, ValueError) and "error: " not in result.output
