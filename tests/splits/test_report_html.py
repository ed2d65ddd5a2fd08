"""report.html of a published split (splits/report_html.py), built from the bundled real sample."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser

import pytest

from ecombench.flows.cli.build import _print_summary
from ecombench.hashing import sha256_hex
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig
from ecombench.splits.report import count_tasks
from ecombench.splits.report_html import render_html

PLOTS = {  # figure id -> how its caption starts
    "funnel": "Acceptance funnel by stage",
    "rejection-reasons": "Rejection reasons by intent",
    "rubric-type-source": "Rubric type × source",
    "answer-set-sizes": "Answer-set sizes",
    "implicit-requirements": "Implicit-requirement counts",
}
SVG_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


class Page(HTMLParser):
    """Every start tag with its attributes, figures with their <svg> count and caption, acceptance rows."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.figures: dict[str, dict] = {}
        self.accepted: dict[str, int] = {}
        self._figure: str | None = None
        self._in_caption = False
        self._row: str | None = None
        self._cell_class: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "figure":
            self._figure = a["id"]
            self.figures[self._figure] = {"svgs": 0, "caption": ""}
        elif tag == "svg" and self._figure:
            self.figures[self._figure]["svgs"] += 1
        elif tag == "figcaption":
            self._in_caption = True
        elif tag == "tr":
            self._row = a.get("data-intent")
        elif tag == "td":
            self._cell_class = a.get("class")

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        elif tag == "figcaption":
            self._in_caption = False
        elif tag == "td":
            self._cell_class = None

    def handle_data(self, data):
        if self._in_caption and self._figure:
            self.figures[self._figure]["caption"] += data
        if self._row and self._cell_class and "accepted" in self._cell_class.split():
            self.accepted[self._row] = int(data)


@pytest.fixture(scope="module")
def sample_split(sample_catalog, tmp_path_factory, artifacts):
    """The bundled sample built and published as sample/v1: (version dir, manifest, tasks, rejections)."""
    outcome = build_split(BuildConfig(min_hidden_division=1, catalog=str(sample_catalog.path)), "sample",
                          root=tmp_path_factory.mktemp("splits"), artifacts=artifacts)

    def lines(name):
        return [json.loads(x) for x in (outcome.path / name).read_text(encoding="utf-8").splitlines() if x.strip()]

    return outcome.path, outcome.manifest, lines("tasks.jsonl"), lines("rejections.jsonl")


@pytest.fixture(scope="module")
def page_text(sample_split):
    return (sample_split[0] / "report.html").read_text(encoding="utf-8")


def test_report_html_is_written_in_the_version_dir_with_its_checksum(sample_split):
    path, manifest, _, _ = sample_split
    data = (path / "report.html").read_bytes()
    assert manifest["files"]["report.html"] == {"sha256": sha256_hex(data), "bytes": len(data),
                                                "rows": data.count(b"\n")}


def test_report_html_draws_every_plot_inline_as_svg(page_text):
    page = Page(page_text)
    assert sum(tag == "svg" for tag, _ in page.tags) >= 5
    assert set(page.figures) == set(PLOTS)
    assert all(f["svgs"] == 1 for f in page.figures.values())


def test_report_html_needs_no_network(page_text):
    page = Page(page_text)
    assert not [a for tag, a in page.tags if tag == "script"]
    assert not [a for tag, a in page.tags if tag in ("link", "img", "iframe", "object", "embed")]
    assert set(re.findall(r"https?://[^\s\"'<>()]+", page_text)) <= SVG_NAMESPACES
    assert "<?xml" not in page_text and "<!DOCTYPE svg" not in page_text


def test_each_plot_has_its_caption(page_text):
    page = Page(page_text)
    for plot_id, start in PLOTS.items():
        assert page.figures[plot_id]["caption"].startswith(start), plot_id


def test_accepted_counts_shown_equal_the_manifest(sample_split, page_text):
    _, manifest, _, _ = sample_split
    page = Page(page_text)
    expected = {intent: v["accepted"] for intent, v in manifest["counts"]["per_intent"].items()}
    assert page.accepted == expected
    funnel_svg = page_text.split('<figure id="funnel">', 1)[1].split("</figure>", 1)[0]
    for intent, n in expected.items():  # the funnel's legend names each intent with its accepted count
        assert f"{intent} ({n})" in funnel_svg
        assert manifest["funnel"][intent]["7"] == n


def test_rendering_the_published_records_again_gives_identical_bytes(sample_split):
    path, manifest, tasks, rejections = sample_split
    first = render_html(manifest, tasks, rejections).encode("utf-8")
    assert render_html(manifest, tasks, rejections).encode("utf-8") == first
    assert first == (path / "report.html").read_bytes()


def test_catalog_text_in_a_rejection_message_is_escaped(sample_split):
    _, manifest, tasks, rejections = sample_split
    rejections = copy.deepcopy(rejections)
    example = rejections[0]  # the first rejection of its reason is the one the table shows
    example["message"] += ' <script>alert("x")</script> & <b>bold</b>'
    text = render_html(manifest, tasks, rejections)
    assert "<script>" not in text and "<b>bold</b>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in text
    assert example["candidate_id"] in text


def test_a_split_without_tasks_or_rejections_still_renders_every_plot(sample_split):
    _, manifest, _, _ = sample_split
    empty = dict(manifest, counts=count_tasks([], [], list(manifest["counts"]["per_intent"])))
    page = Page(render_html(empty, [], []))
    assert set(page.figures) == set(PLOTS)
    assert set(page.accepted.values()) == {0}


class Tables(HTMLParser):
    """<h2> headings in order, and each table's rows (by table id) as (row attributes, cell texts)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.headings: list[str] = []
        self.tables: dict[str, list[tuple[dict, list[str]]]] = {}
        self._h2: str | None = None
        self._table: str | None = None
        self._cell: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h2":
            self._h2 = ""
        elif tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append((a, []))
        elif tag == "td" and self._table:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "h2":
            self.headings.append(self._h2)
            self._h2 = None
        elif tag == "td" and self._cell is not None:
            self.tables[self._table][-1][1].append(self._cell)
            self._cell = None
        elif tag == "table":
            self.tables[self._table] = [row for row in self.tables[self._table] if row[1]]  # not the header row
            self._table = None

    def handle_data(self, data):
        if self._h2 is not None:
            self._h2 += data
        if self._cell is not None:
            self._cell += data


def _md_headings(version_dir):
    return [line[3:] for line in (version_dir / "report.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("## ")]


def test_report_html_has_every_section_of_report_md(sample_split):
    version_dir, manifest, _, _ = sample_split
    page = Tables((version_dir / "report.html").read_text(encoding="utf-8"))
    want = {"Acceptance by intent", "Sampling shortfalls", "Top rejection reasons", "Data expectations"}
    assert want <= {h.split(" (")[0] for h in _md_headings(version_dir)}  # the sample build has shortfalls
    assert want <= set(page.headings)


def test_sampling_shortfalls_in_html_are_the_manifests(sample_split):
    version_dir, manifest, _, _ = sample_split
    rows = Tables((version_dir / "report.html").read_text(encoding="utf-8")).tables["shortfalls"]
    short = {k: v for k, v in manifest["sampling"].items() if v["shortfall"]}
    assert {a["data-intent"]: [int(c) for c in cells[1:4]] for a, cells in rows} == {
        k: [v["sampled"], v["requested"], v["eligible"]] for k, v in short.items()}


def test_each_rejection_reason_shows_its_stage_and_its_inspect_command(sample_split):
    from ecombench.schemas.findings import STAGE_OF_REASON

    version_dir, manifest, _, _ = sample_split
    text = (version_dir / "report.html").read_text(encoding="utf-8")
    rows = Tables(text).tables["top-reasons"]
    assert [a["data-reason"] for a, _ in rows] == list(manifest["counts"]["rejection_reasons"])
    for attrs, cells in rows:
        reason = attrs["data-reason"]
        assert int(attrs["data-stage"]) == STAGE_OF_REASON[reason]
        assert cells[1].startswith(f"{STAGE_OF_REASON[reason]}. ")
        assert cells[-1] == f"ecombench inspect sample@{manifest['version']} --reason {reason}"
    # The chart's legend names the stage beside each reason too.
    for reason in manifest["counts"]["rejection_reasons"]:
        assert f"{STAGE_OF_REASON[reason]}. {reason} (" in text


def test_data_expectations_in_html_are_the_manifests(sample_split):
    version_dir, manifest, _, _ = sample_split
    rows = Tables((version_dir / "report.html").read_text(encoding="utf-8")).tables["expectations"]
    want = [(suite, e["name"]) for suite, s in manifest["expectations"]["suites"].items() for e in s["expectations"]]
    assert [(cells[0], cells[1].split(" (")[0]) for _, cells in rows] == want


def test_an_oracle_check_of_no_validated_candidate_renders_a_dash_for_its_accuracy(sample_split):
    # What `build --oracle-check --allow-empty` publishes when every candidate is rejected before the check.
    _, manifest, _, _ = sample_split
    checks = {"oracle": {"candidates": 0, "solved": 0, "accuracy": None, "rejected_oracle_failed": 0,
                         "accuracy_on_published": None, "tool_calls": {"mean": None, "max": None}},
              "null": {"tasks": 0, "correct": 0, "accuracy": None}}
    empty = dict(manifest, counts=count_tasks([], [], list(manifest["counts"]["per_intent"])), agent_checks=checks)
    rows = Tables(render_html(empty, [], [])).tables["agent-checks"]
    assert [cells for _, cells in rows] == [["oracle (validated candidates)", "0", "0", "–"]]


def test_the_build_summary_of_an_oracle_check_of_no_validated_candidate_prints_a_dash(sample_split, capsys):
    version_dir, manifest, _, _ = sample_split
    checks = {"budget": {"max_tool_calls": 100}, "null": {"tasks": 0, "correct": 0, "accuracy": None},
              "oracle": {"candidates": 0, "solved": 0, "accuracy": None, "rejected_oracle_failed": 0}}
    _print_summary(version_dir, dict(manifest, agent_checks=checks))
    assert "oracle check: solved 0 of 0 validated tasks within 100 tool calls (0 rejected as oracle_failed); " \
           "null agent 0 of 0 (–)" in capsys.readouterr().out
