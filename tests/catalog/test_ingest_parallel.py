"""Parallel ingestion gives the same snapshot as one process (issue 6), on real records.

Blocks are made small here (`block_bytes`) so that the real files, a few MB, are cut
into many blocks and really go through the worker pool.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import orjson
import pytest

from ecombench.catalog.ingest import iter_blocks, iter_lines, write_catalog_snapshot
from ecombench.catalog.records import Block, TruncatedInput

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "ecombench" / "data" / "sample"
SHARED = REPO.parent / "shared" / "data" / "amazon-reviews-2023"


def digests(snapshot: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(snapshot.iterdir())}


@pytest.fixture
def real_inputs(tmp_path) -> tuple[list[Path], list[Path]]:
    """The real shared files (raw and Hugging Face form, with 303 duplicate parent_asins between
    them) plus a gzip copy of the bundled sample with damaged lines, so every rule is crossed."""
    if not SHARED.is_dir():
        pytest.skip(f"shared real data not found at {SHARED}")
    with gzip.open(SAMPLE / "meta.jsonl.gz", "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    damaged = lines[:100] + [lines[3][:50] + b"\n", b"\n", b"[1]\n", lines[7]] + lines[100:]
    damaged_gz = tmp_path / "damaged.jsonl.gz"
    damaged_gz.write_bytes(gzip.compress(b"".join(damaged), mtime=0))
    meta = [SHARED / "meta_electronics_beauty_office.jsonl", damaged_gz, SHARED / "meta_hf_form_sample.jsonl",
            SHARED / "meta_home_toys_sports.jsonl", SHARED / "with-reviews" / "meta_electronics_with_reviews.jsonl"]
    reviews = [SHARED / "with-reviews" / "reviews_electronics.jsonl", SAMPLE / "reviews.jsonl.gz"]
    return meta, reviews


def test_worker_count_and_block_size_do_not_change_the_snapshot(real_inputs, tmp_path):
    meta, reviews = real_inputs
    # Same snapshot name (it goes into the manifest), different folders.
    one = write_catalog_snapshot(meta, reviews, tmp_path / "one" / "snap", batch_size=1000, workers=1)
    two = write_catalog_snapshot(meta, reviews, tmp_path / "two" / "snap", batch_size=1000, workers=2,
                                 block_bytes=256 * 1024)
    assert digests(tmp_path / "one" / "snap") == digests(tmp_path / "two" / "snap")
    assert one == two
    counts = one["counts"]
    # 303 real duplicates between the shared files, 527 sample products already ingested (their
    # reviews counted again are real copies) and the damaged lines of the sample copy.
    assert counts["bad_by_reason"]["duplicate_parent_asin"] >= 303
    assert counts["bad_by_reason"]["truncated_line"] == 1 and counts["bad_by_reason"]["not_an_object"] == 1


def test_an_empty_file_and_a_file_given_twice_keep_their_place_in_the_stream_of_blocks(tmp_path):
    # The pool converts every input's blocks in one stream (the metadata's while the reviews' are spilled): an empty
    # review file has no block at all, and the second copy of a file is an input of its own.
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    meta = [SAMPLE / "meta.jsonl.gz", SAMPLE / "meta.jsonl.gz"]
    reviews = [empty, SAMPLE / "reviews.jsonl.gz", empty, SAMPLE / "reviews.jsonl.gz"]
    one = write_catalog_snapshot(meta, reviews, tmp_path / "one" / "snap", batch_size=500, workers=1)
    two = write_catalog_snapshot(meta, reviews, tmp_path / "two" / "snap", batch_size=500, workers=2,
                                 block_bytes=64 * 1024)
    assert digests(tmp_path / "one" / "snap") == digests(tmp_path / "two" / "snap")
    assert one == two
    lines = [entry["lines"] for entry in one["inputs"]]
    assert lines[0] == lines[1] > 0 and lines[2] == lines[4] == 0 and lines[3] == lines[5] > 0
    assert one["inputs"][1]["bad_by_reason"]["duplicate_parent_asin"] == one["inputs"][0]["records_ok"]


def test_bad_records_keep_line_order_with_duplicates_merged(real_inputs, tmp_path):
    meta, reviews = real_inputs
    write_catalog_snapshot(meta, reviews, tmp_path / "snap", workers=2, block_bytes=64 * 1024)
    bad = [orjson.loads(line) for line in (tmp_path / "snap" / "bad_records.jsonl").read_bytes().splitlines()]
    order = {p.name: i for i, p in enumerate(meta)}
    keys = [(order[b["file"]], b["line"]) for b in bad]
    assert keys == sorted(keys)
    damaged = {b["line"]: b["reason"] for b in bad if b["file"] == "damaged.jsonl.gz"}
    assert damaged[101] == "truncated_line" and damaged[103] == "not_an_object"
    assert damaged[104] == "duplicate_parent_asin"  # a second copy of real line 8 of the same file


def test_blocks_number_lines_like_the_file(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": 2}\n{"a": 3}')  # a blank line and no final newline
    blocks = list(iter_blocks(path, block_bytes=4))
    lines = [(b.first_line + k, line) for b in blocks for k, line in enumerate(b.lines)]
    assert lines == [(1, b'{"a": 1}'), (2, b""), (3, b'{"a": 2}'), (4, b'{"a": 3}')]
    assert [raw for _, raw in iter_lines(path)] == [b'{"a": 1}\n', b"\n", b'{"a": 2}\n', b'{"a": 3}']


def test_concatenated_gzip_members_read_whole_and_truncation_keeps_complete_lines(tmp_path):
    with gzip.open(SAMPLE / "meta.jsonl.gz", "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    members = tmp_path / "members.jsonl.gz"
    members.write_bytes(gzip.compress(b"".join(lines[:200]), mtime=0) + gzip.compress(b"".join(lines[200:]), mtime=0))
    got = [raw for item in iter_lines(members) for raw in [item[1]]]
    assert got == lines

    whole = gzip.compress(b"".join(lines), mtime=0)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    items = list(iter_blocks(cut, block_bytes=10_000))
    assert isinstance(items[-1], TruncatedInput)
    read = [line for b in items[:-1] if isinstance(b, Block) for line in b.lines]
    assert 0 < len(read) < len(lines) and items[-1].line == len(read) + 1
    assert [line + b"\n" for line in read] == lines[: len(read)]


@pytest.mark.parametrize(("read", "inflate"), [(4096, 1000), (100, 100_000), (1 << 20, 4096)])
def test_small_reads_and_bounded_inflate_steps_give_the_same_lines(tmp_path, monkeypatch, read, inflate):
    # An inflate step returns at most _INFLATE_BYTES; the rest of its input waits in the unconsumed tail, and output
    # may wait with no input left: every byte still comes out, gzip members read whole as before.
    import ecombench.catalog.ingest as ingest

    with gzip.open(SAMPLE / "meta.jsonl.gz", "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    members = tmp_path / "members.jsonl.gz"
    members.write_bytes(gzip.compress(b"".join(lines[:200]), mtime=0) + gzip.compress(b"".join(lines[200:]), mtime=0))
    monkeypatch.setattr(ingest, "_READ_BYTES", read)
    monkeypatch.setattr(ingest, "_INFLATE_BYTES", inflate)
    assert [item[1] for item in iter_lines(members)] == lines
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(members.read_bytes()[:-40_000])
    items = list(iter_blocks(cut, block_bytes=10_000))
    assert isinstance(items[-1], TruncatedInput)
    read_lines = [line for b in items[:-1] if isinstance(b, Block) for line in b.lines]
    assert read_lines == [line.rstrip(b"\n") for line in lines[:len(read_lines)]] and len(read_lines) < len(lines)


def test_inputs_are_hashed_in_the_read_itself_truncated_corrupt_or_whole(tmp_path):
    # iter_blocks' digest sees every byte of the file, even past the point where a gzip stream breaks; the
    # manifest's sha256 is the file's.
    import hashlib

    from ecombench.catalog.ingest import file_sha256

    whole = (SAMPLE / "meta.jsonl.gz").read_bytes()
    cut, corrupt = tmp_path / "cut.jsonl.gz", tmp_path / "corrupt.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    corrupt.write_bytes(whole[:4000] + bytes(b ^ 0x5A for b in whole[4000:9000]) + whole[9000:])
    for path in (SAMPLE / "meta.jsonl.gz", cut, corrupt):
        digest = hashlib.sha256()
        items = list(iter_blocks(path, block_bytes=10_000, split=False, digest=digest))
        assert digest.hexdigest() == file_sha256(path)
        assert isinstance(items[-1], TruncatedInput) == (path != SAMPLE / "meta.jsonl.gz")
    manifest = write_catalog_snapshot([SAMPLE / "meta.jsonl.gz", cut], [SAMPLE / "reviews.jsonl.gz"],
                                      tmp_path / "snap", workers=1)
    assert [i["sha256"] for i in manifest["inputs"]] == [file_sha256(p) for p in
                                                         (SAMPLE / "meta.jsonl.gz", cut, SAMPLE / "reviews.jsonl.gz")]
