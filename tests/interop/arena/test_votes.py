"""`ecombench compare --votes`: CRS Arena-style vote tables ranked with intervals; barely connected graphs named.

The tables are written here in the columns of CRS Arena's votes_open.csv / votes_closed.csv
(iai-group/crsarena-dial README: session_id, user_id, crs1, crs2, vote, feedback; `vote` is the chosen
system or `tie`). The corpus has no licence, so no row of it is copied.
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from ecombench.errors import InputError
from ecombench.flows.cli import app
from ecombench.interop.arena.ratings import direction, elo
from ecombench.interop.arena.votes import compare_votes, graph_warnings, read_votes

HEADER = ["session_id", "user_id", "crs1", "crs2", "vote", "feedback"]


def write_table(path, rows):
    """rows: (crs1, crs2, vote[, user]) -> a CSV in CRS Arena's columns, one session a minute."""
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for i, row in enumerate(rows):
            a, b, vote = row[:3]
            user = row[3] if len(row) > 3 else f"user-{i:03d}"
            w.writerow([f"2024-09-09 12:{i // 60:02d}:{i % 60:02d}", user, a, b, vote,
                        'said "fine", then left' if i == 0 else ""])
    return path


# Three systems that play each other often; two that only play each other; one vote between the groups.
BARELY = ([("alpha", "beta", "alpha")] * 5 + [("beta", "alpha", "beta")] * 2 + [("alpha", "gamma", "alpha")] * 6
          + [("gamma", "alpha", "tie")] * 2 + [("beta", "gamma", "beta")] * 4 + [("gamma", "beta", "gamma")] * 3
          + [("delta", "epsilon", "delta")] * 4 + [("epsilon", "delta", "epsilon")] * 2
          + [("delta", "epsilon", "tie")] + [("gamma", "delta", "gamma")])


def test_compare_votes_ranks_prints_intervals_and_warns_on_a_barely_connected_graph(tmp_path):
    table = write_table(tmp_path / "votes_test.csv", BARELY)
    out = tmp_path / "cmp"
    res = CliRunner().invoke(app, ["compare", "--votes", str(table), "--out", str(out), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    ranked = re.findall(r"^\s+(\d)\. (\w+)\s+(\d+) votes\s+W/T/L (\d+)/(\d+)/(\d+)\s+"
                        r"Bradley-Terry (-?\d+) \[(-?\d+), (-?\d+)\]\s+Elo \(one pass\) (\d+) \[(\d+), (\d+)\]",
                        res.output, re.M)
    assert [r[1] for r in ranked][:1] == ["alpha"] and len(ranked) == 5
    for r in ranked:
        bt, lo, hi = map(int, r[6:9])
        assert lo <= bt <= hi
    c = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert c["votes"] == len(BARELY) and {s["name"]: s["opponents"] for s in c["systems"]}["epsilon"] == 1
    warnings = "\n".join(c["warnings"])
    assert "Bradley–Terry has no finite fit" in warnings and "{delta, epsilon}" in warnings
    assert "1 vote of delta vs gamma is the only link between {alpha, beta, gamma} and {delta, epsilon}" in warnings
    assert "epsilon met only delta (7 votes)" in warnings
    assert res.output.count("warning: ") == 3  # on stderr, which the runner mixes in
    # Probabilities say which way they point.
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "## Warnings" in md and "| alpha | beta | 7 | 5 | 0 | 2 | alpha (P " in md
    assert "<h2>Warnings</h2>" in (out / "compare.html").read_text(encoding="utf-8")


def test_elo_is_one_pass_in_table_order_as_crs_arena_publishes_it(tmp_path):
    rows = [("a", "b", "a"), ("b", "c", "tie"), ("c", "a", "c"), ("a", "b", "b")]
    c = compare_votes([write_table(tmp_path / "v.csv", rows)], replicates=20)
    # By hand, K = 16 from 1000: a beats b (a 1008, b 992); b ties c (b gains 16 * (0.5 - 0.4885) = 0.18);
    # c beats a (c 1008.00, a 999.81); b beats a (a loses 16 * 0.511 = 8.18: a 991.64, b 1000.36).
    assert [c["ratings"]["runs"][n]["elo"] for n in "abc"] == pytest.approx([991.64, 1000.36, 1008.0], abs=0.01)
    want = elo(3, [(0, 1, 1.0), (1, 2, 0.5), (2, 0, 1.0), (0, 1, 0.0)])
    assert [c["ratings"]["runs"][n]["elo"] for n in "abc"] == [round(float(x), 2) for x in want]


def test_a_well_mixed_table_gives_no_graph_warning_and_split_groups_are_named(tmp_path):
    mixed = [("a", "b", "a"), ("b", "a", "b"), ("b", "c", "b"), ("c", "b", "c"), ("c", "a", "c"), ("a", "c", "tie")] * 3
    assert graph_warnings(["a", "b", "c"], read_votes([write_table(tmp_path / "m.csv", mixed)])) == []
    apart = [("a", "b", "a"), ("b", "a", "b")] * 3 + [("c", "d", "c"), ("d", "c", "d")] * 3
    warnings = graph_warnings(list("abcd"), read_votes([write_table(tmp_path / "s.csv", apart)]))
    assert warnings[0].startswith("the systems fall into 2 groups that never met ({a, b} | {c, d})")


def test_duplicate_votes_are_kept_with_a_warning_or_dropped(tmp_path):
    rows = [("a", "b", "a", "u1"), ("a", "b", "a", "u1"), ("b", "a", "b", "u2"), ("a", "b", "tie", "u3")] * 1
    table = write_table(tmp_path / "d.csv", rows)
    kept = compare_votes([table], replicates=20)
    assert kept["votes"] == 4 and "1 duplicate vote(s)" in kept["warnings"][0] and "d.csv:3" in kept["warnings"][0]
    dropped = compare_votes([table], replicates=20, dedupe=True)
    assert dropped["votes"] == 3 and "dropped" in dropped["warnings"][0]


def test_a_bad_vote_names_its_file_and_line(tmp_path):
    table = write_table(tmp_path / "bad.csv", [("a", "b", "a"), ("a", "b", "c")])
    with pytest.raises(InputError, match=r"bad\.csv:3: vote 'c' is neither crs1 \(a\), crs2 \(b\) nor tie"):
        read_votes([table])
    (tmp_path / "cols.csv").write_text("x,y,vote\n1,2,1\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["compare", "--votes", str(tmp_path / "cols.csv")])
    assert res.exit_code == 1 and "no column crs1, crs2" in res.output and len(res.output.splitlines()) == 1
    assert CliRunner().invoke(app, ["compare"]).exit_code == 1  # neither runs nor votes


def test_probabilities_name_their_direction_and_identical_systems_read_as_even():
    same = np.array([1000.0, 1010.0, 990.0])
    assert direction("A", "B", same, same + 1e-9) == {"p_a_better": 0.5, "better": None, "p_better": 0.5}
    assert direction("A", "B", np.array([900.0, 950.0]), np.array([1000.0, 1000.0]))["better"] == "B"
