"""Build the bundled real sample in ecombench/data/sample/ from the shared Amazon Reviews 2023 files.

Deterministic: products are chosen in order of sha256(parent_asin), never at random, and the
gzip files are written with mtime=0, so rerunning gives byte-identical files. Raw lines are
copied byte for byte (real records are never edited; a missing final newline is the only
thing added).

    .venv/bin/python data/make_sample.py [SOURCE_DIR]

SOURCE_DIR defaults to ../shared/data/amazon-reviews-2023 relative to the repository.

What is taken:
  * 360 products of meta_electronics_beauty_office.jsonl with at least 8 `details` keys,
    stratified by main_category: every category with eligible products gets one, the rest
    is shared in proportion to the eligible counts (largest remainder, ties by name);
  * 60 products of with-reviews/meta_electronics_with_reviews.jsonl with at least 3 reviews
    (first occurrence of each parent_asin only; the source file repeats three);
  * every review of those 60 products, in source order.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
from collections import Counter
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "amazon-reviews-2023"
SAMPLE_DIR = REPO / "ecombench" / "data" / "sample"

CATALOG_FILE = "meta_electronics_beauty_office.jsonl"
REVIEWED_META_FILE = "with-reviews/meta_electronics_with_reviews.jsonl"
REVIEWS_FILE = "with-reviews/reviews_electronics.jsonl"

N_CATALOG = 360
MIN_DETAILS = 8
N_REVIEWED = 60
MIN_REVIEWS = 3


def _order(asin: str) -> str:
    return hashlib.sha256(asin.encode("utf-8")).hexdigest()


def _lines(path: Path) -> list[tuple[bytes, dict]]:
    with open(path, "rb") as fh:
        return [(raw if raw.endswith(b"\n") else raw + b"\n", orjson.loads(raw)) for raw in fh if raw.strip()]


def allocate(counts: dict[str, int], total: int) -> dict[str, int]:
    """Share `total` over categories: one each, then largest remainder in proportion to counts."""
    share = {c: 1 for c, n in counts.items() if n > 0}
    rest = total - len(share)
    weight = sum(counts.values())
    exact = {c: rest * counts[c] / weight for c in share}
    for c in share:
        share[c] += int(exact[c])
    left = total - sum(share.values())
    for c in sorted(share, key=lambda c: (-(exact[c] - int(exact[c])), c))[:left]:
        share[c] += 1
    if any(share[c] > counts[c] for c in share):
        raise ValueError(f"not enough eligible products for {share} from {counts}")
    return share


def pick_catalog(lines: list[tuple[bytes, dict]]) -> list[bytes]:
    """The stratified catalog sample, in sha256(parent_asin) order."""
    eligible = [(raw, obj) for raw, obj in lines if len(obj.get("details") or {}) >= MIN_DETAILS]
    eligible.sort(key=lambda item: _order(item[1]["parent_asin"]))
    share = allocate(Counter(obj["main_category"] for _, obj in eligible), N_CATALOG)
    taken: Counter = Counter()
    out = []
    for raw, obj in eligible:
        cat = obj["main_category"]
        if taken[cat] < share[cat]:
            taken[cat] += 1
            out.append(raw)
    return out


def pick_reviewed(meta: list[tuple[bytes, dict]], reviews: list[tuple[bytes, dict]]) -> tuple[list[bytes], list[bytes]]:
    """The reviewed products (sha256 order) and all their reviews (source order)."""
    per_product = Counter(obj["parent_asin"] for _, obj in reviews)
    first: dict[str, bytes] = {}
    for raw, obj in meta:
        first.setdefault(obj["parent_asin"], raw)
    chosen = sorted((a for a in first if per_product[a] >= MIN_REVIEWS), key=_order)[:N_REVIEWED]
    keep = set(chosen)
    return [first[a] for a in chosen], [raw for raw, obj in reviews if obj["parent_asin"] in keep]


def write_gzip(path: Path, lines: list[bytes]) -> None:
    """Gzip with mtime=0 and no file name in the header, so the bytes depend on content only."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.writelines(lines)
    path.write_bytes(buf.getvalue())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=str(DEFAULT_SOURCE), help="amazon-reviews-2023 folder")
    parser.add_argument("--out", default=str(SAMPLE_DIR), help="output folder (default ecombench/data/sample)")
    args = parser.parse_args(argv)
    src, out = Path(args.source), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    catalog = pick_catalog(_lines(src / CATALOG_FILE))
    reviewed, reviews = pick_reviewed(_lines(src / REVIEWED_META_FILE), _lines(src / REVIEWS_FILE))
    write_gzip(out / "meta.jsonl.gz", catalog + reviewed)
    write_gzip(out / "reviews.jsonl.gz", reviews)
    print(f"{out}: {len(catalog)} + {len(reviewed)} products, {len(reviews)} reviews")


if __name__ == "__main__":
    main()
