"""The documentation cannot drift from what it documents: the CLI reference, the layer list, links, the README.

docs/cli.md is generated from the Typer app by Typer's own documentation command (run it again after changing
a command or an option):

    .venv/bin/typer ecombench.flows.cli utils docs --name ecombench --title "ecombench command reference" \
        --output docs/cli.md
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from typer.cli import app as typer_cli
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
CLI_DOCS_ARGS = ["ecombench.flows.cli", "utils", "docs", "--name", "ecombench",
                 "--title", "ecombench command reference"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_cli_reference_is_the_typer_apps_current_help(tmp_path):
    out = tmp_path / "cli.md"
    result = CliRunner().invoke(typer_cli, [*CLI_DOCS_ARGS, "--output", str(out)])
    assert result.exit_code == 0, result.output
    generated = out.read_text(encoding="utf-8")
    assert "## `ecombench build`" in generated and "--oracle-check" in generated
    assert (REPO / "docs" / "cli.md").read_text(encoding="utf-8") == generated, (
        "docs/cli.md is stale: run .venv/bin/typer " + " ".join(f'"{a}"' if " " in a else a for a in CLI_DOCS_ARGS)
        + " --output docs/cli.md")


def _contract_layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    return [" ".join(layer.split()) for layer in layers["layers"]]


def _documented_layers() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("<!-- layers:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return [" ".join(line.split()) for line in block.splitlines() if line.strip()]


def test_the_architecture_doc_lists_the_import_contracts_layers():
    layers = _contract_layers()
    assert layers[0] == "ecombench.flows" and len(layers) >= 10
    assert _documented_layers() == layers


def test_every_relative_link_of_the_docs_reaches_a_file():
    pages = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_the_readme_is_short_and_opens_with_the_two_commands_ci_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    commands = re.findall(r"```bash\n(.+?)\n```", readme)
    assert commands[0].endswith(" && .venv/bin/ecombench build") and " -e " in commands[0]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci  # the README's test command is CI's, verbatim
