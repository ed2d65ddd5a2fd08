"""Scale-up catalogs for benchmarks (issue 6): real Amazon Reviews 2023 records resampled to any size.

Writes `meta.jsonl.gz` (official raw metadata form) and `reviews.jsonl.gz` (official raw review
form) with N products. Product i gets the new parent_asin `S` + i in 9 digits (unique by
construction; real ASINs never start with `S` followed by nine digits) and fields drawn from real
records of `../shared/data/amazon-reviews-2023` (raw-form files only; the Hugging Face sample is
left out), four draws per product:

- *identity* record A, uniform over every real product: title, main_category, features,
  description, images, videos, store, categories, bought_together (and subtitle/author when
  present);
- *details* from record B, *price* from record C, *ratings* (average_rating, rating_number) from
  record D, each uniform over the real products with A's main_category, so details stay plausible
  for the category while no two generated products are copies of each other (a catalog of copies
  would give every task an answer set of hundreds of identical products);
- *reviews*: every real review of A, with parent_asin and asin set to the new id. Reviews per
  product therefore follow the shared real data: 3,175 reviews over 7,273 products, about 0.44
  per product (0.44 x N reviews expected).

Draws come from sha256("ecombench-scale", seed, i): product i is the same whatever N is, so the
100k catalog is the first 100k products of the 1M one. Values are serialised exactly like the
source lines (`json.dumps(..., ensure_ascii=False)`, which reproduces every real line byte for
byte), keys in the source order.

Speed: lines are joined from pre-serialised fragments and compressed with ISA-L (`isal`, about
5x zlib's speed at level 1) in blocks of `BLOCK` products, each block one gzip member (a file of
concatenated members is one valid gzip stream; gzip, igzip and zcat read it whole). Blocks are
built by a process pool and written in order, so the bytes do not depend on the worker count.

    .venv/bin/python benchmarks/scale_data.py --sizes 100k,1m --out /work/scale-data/generated
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from isal import isal_zlib

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "amazon-reviews-2023"
META_FILES = ("meta_electronics_beauty_office.jsonl", "meta_home_toys_sports.jsonl",
              "with-reviews/meta_electronics_with_reviews.jsonl")
REVIEW_FILES = ("with-reviews/reviews_electronics.jsonl",)

GENERATOR_VERSION = 1  # bump when the output for the same (size, seed) changes
BLOCK = 20_000  # products per gzip member and per pool job
LEVEL = 1  # ISA-L level: 1 is as small as zlib's 1 at ~5x its speed
IDENTITY = ("main_category", "title", "features", "description", "images", "videos", "store",
            "categories", "bought_together", "subtitle", "author")
RATINGS = ("average_rating", "rating_number")
# The source's key order (every real raw line has it); keys absent from a record are skipped.
KEY_ORDER = ("main_category", "title", "average_rating", "rating_number", "features", "description",
             "price", "images", "videos", "store", "categories", "details", "parent_asin",
             "bought_together", "subtitle", "author")


def parse_size(text: str) -> int:
    """'100k' -> 100_000, '1m' -> 1_000_000, '3.7m' -> 3_700_000, '2500' -> 2500.

    Raises:
        ValueError: not a positive count with an optional k/m suffix.
    """
    t = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    number = t[:-1] if scale != 1 else t
    try:
        value = round(float(number) * scale)
    except ValueError:
        raise ValueError(f"size {text!r} is not a count like 100k, 1m or 3.7m") from None
    if value < 1:
        raise ValueError(f"size {text!r} must be at least 1 product")
    return value


def size_label(n: int) -> str:
    """100_000 -> '100k', 3_700_000 -> '3.7m' (inverse of `parse_size` for round sizes)."""
    if n % 100_000 == 0 and n >= 1_000_000:
        return f"{n / 1_000_000:g}m"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


@dataclass
class Pool:
    """Pre-serialised fragments of the real records, the input of every block.

    Attributes:
        identity: per real product, `{key: b'"key": value'}` of the identity fields.
        details, price, ratings: per real product, the fragment(s) of that group.
        same_category: per real product, the indices of products sharing its main_category.
        reviews: per real product, its review lines split around parent_asin/asin, as
            (prefix, middle, suffix) so a new id can be put in without re-serialising.
    """

    identity: list[dict[str, bytes]]
    details: list[bytes]
    price: list[bytes]
    ratings: list[dict[str, bytes]]
    same_category: list[list[int]]
    reviews: list[list[tuple[bytes, ...]]]


def _fragment(key: str, value) -> bytes:
    return f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}".encode()


def load_pool(data_dir: Path = DATA) -> Pool:
    """Read the real raw-form files once and pre-serialise every field group.

    Raises:
        FileNotFoundError: a real file is missing (names it).
        ValueError: a real line is not a JSON object with a parent_asin (names file and line).
    """
    identity, details, price, ratings, category, asins = [], [], [], [], [], []
    for name in META_FILES:
        path = data_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"real metadata file not found: {path}")
        with open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):  # noqa: B007 - line_no names the line after the loop
                if not line.strip():
                    continue
                obj = json.loads(line)
                if not isinstance(obj, dict) or not isinstance(obj.get("parent_asin"), str):
                    raise ValueError(f"{path}:{line_no}: not a metadata record with a parent_asin")
                identity.append({k: _fragment(k, obj[k]) for k in IDENTITY if k in obj})
                details.append(_fragment("details", obj.get("details", {})))
                price.append(_fragment("price", obj.get("price")))
                ratings.append({k: _fragment(k, obj.get(k)) for k in RATINGS})
                category.append(obj.get("main_category"))
                asins.append(obj["parent_asin"])
    by_category: dict = defaultdict(list)
    for i, c in enumerate(category):
        by_category[c].append(i)
    index_of: dict[str, int] = {}
    for i, a in enumerate(asins):
        index_of.setdefault(a, i)
    reviews: list[list[tuple[bytes, ...]]] = [[] for _ in asins]
    for name in REVIEW_FILES:
        path = data_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"real review file not found: {path}")
        with open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):  # noqa: B007 - line_no names the line after the loop
                if not line.strip():
                    continue
                obj = json.loads(line)
                owner = index_of.get(obj.get("parent_asin"))
                if owner is None:
                    continue
                parts = []
                for k, v in obj.items():
                    if k in ("asin", "parent_asin"):
                        parts.append(k)  # a placeholder for the new id
                    else:
                        parts.append(_fragment(k, v))
                reviews[owner].append(tuple(parts))
    return Pool(identity, details, price, ratings, [by_category[c] for c in category], reviews)


def product_id(i: int) -> str:
    """The generated parent_asin of product i: 'S' + nine digits (unique, ASIN-length)."""
    return f"S{i:09d}"


def draws(seed: int, i: int) -> tuple[int, int, int, int]:
    """Four 64-bit draws for product i from sha256('ecombench-scale', seed, i)."""
    d = hashlib.sha256(f"ecombench-scale\x00{seed}\x00{i}".encode()).digest()
    return (int.from_bytes(d[0:8], "big"), int.from_bytes(d[8:16], "big"),
            int.from_bytes(d[16:24], "big"), int.from_bytes(d[24:32], "big"))


def product_lines(pool: Pool, seed: int, start: int, stop: int) -> tuple[bytes, bytes]:
    """Uncompressed metadata and review JSONL of products start..stop-1 (pure; the tested core).

    Returns:
        (meta_bytes, review_bytes), each a run of newline-terminated lines.
    """
    meta, reviews = [], []
    n = len(pool.identity)
    for i in range(start, stop):
        a_draw, b_draw, c_draw, d_draw = draws(seed, i)
        a = a_draw % n
        peers = pool.same_category[a]
        b, c, d = peers[b_draw % len(peers)], peers[c_draw % len(peers)], peers[d_draw % len(peers)]
        pid = product_id(i)
        ident, rat = pool.identity[a], pool.ratings[d]
        frags = []
        for key in KEY_ORDER:
            if key == "details":
                frags.append(pool.details[b])
            elif key == "price":
                frags.append(pool.price[c])
            elif key == "parent_asin":
                frags.append(b'"parent_asin": "' + pid.encode() + b'"')
            elif key in rat:
                frags.append(rat[key])
            elif key in ident:
                frags.append(ident[key])
        meta.append(b"{" + b", ".join(frags) + b"}\n")
        if pool.reviews[a]:
            id_frag = {"asin": b'"asin": "' + pid.encode() + b'"',
                       "parent_asin": b'"parent_asin": "' + pid.encode() + b'"'}
            for parts in pool.reviews[a]:
                reviews.append(b"{" + b", ".join(id_frag.get(p, p) if isinstance(p, str) else p
                                                 for p in parts) + b"}\n")
    return b"".join(meta), b"".join(reviews)


def _gzip_member(data: bytes) -> bytes:
    # wbits 31: gzip header with mtime 0, so equal input gives equal bytes.
    c = isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


_POOL: Pool | None = None


def _init_worker(data_dir: str) -> None:
    global _POOL
    _POOL = load_pool(Path(data_dir))


def _block(args: tuple[int, int, int]) -> tuple[bytes, bytes, int, int, int]:
    seed, start, stop = args
    meta, reviews = product_lines(_POOL, seed, start, stop)
    return (_gzip_member(meta), _gzip_member(reviews) if reviews else b"", len(meta), len(reviews),
            reviews.count(b"\n"))


def _digest(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def generate(n: int, out_dir: Path, *, seed: int = 0, workers: int | None = None,
             data_dir: Path = DATA, verify: bool = False, log=print) -> dict:
    """Write `out_dir/meta.jsonl.gz` and `out_dir/reviews.jsonl.gz` with n products, or reuse them.

    A finished run leaves `out_dir/generated.json` (size, seed, generator version, byte counts,
    sha256 of both files); a rerun with the same parameters whose files still have those sizes
    (and, with `verify`, those digests) returns it without writing. Files are written under a
    temporary name and renamed when complete.

    Args:
        n: products to generate.
        out_dir: the folder the two files and `generated.json` are written to.
        seed: draw seed.
        workers: processes (default: CPU count).
        data_dir: the real data folder.
        verify: re-hash existing files before reusing them.
        log: progress printer.

    Returns:
        The `generated.json` content: {"products", "reviews", "seed", "generator_version",
        "files": {name: {"bytes", "uncompressed_bytes", "sha256"}}, "seconds"}.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    marker = out_dir / "generated.json"
    want = {"products": n, "seed": seed, "generator_version": GENERATOR_VERSION, "block": BLOCK, "level": LEVEL}
    if marker.is_file():
        done = json.loads(marker.read_text())
        same = all(done.get(k) == v for k, v in want.items())
        files_ok = same and all((out_dir / f).is_file() and (out_dir / f).stat().st_size == info["bytes"]
                                for f, info in done["files"].items())
        if files_ok and verify:
            files_ok = all(_digest(out_dir / f) == info["sha256"] for f, info in done["files"].items())
        if files_ok:
            log(f"  {out_dir}: {n:,} products already generated, reused")
            return done
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    tmp = {name: out_dir / f".{name}.partial" for name in ("meta.jsonl.gz", "reviews.jsonl.gz")}
    meta_sha, rev_sha = hashlib.sha256(), hashlib.sha256()
    raw = {"meta.jsonl.gz": 0, "reviews.jsonl.gz": 0}
    n_reviews = 0
    prefix = _prefix(out_dir, n, want)
    first = 0 if prefix is None else prefix[1]["products"]
    jobs = [(seed, s, min(s + BLOCK, n)) for s in range(first, n, BLOCK)]
    with open(tmp["meta.jsonl.gz"], "wb") as meta_fh, open(tmp["reviews.jsonl.gz"], "wb") as rev_fh, \
            ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(str(data_dir),)) as ex:
        if prefix is not None:
            # Product i is the same whatever n is and every BLOCK products are one gzip member: a smaller catalog
            # of whole blocks is, byte for byte, the start of this one.
            where, done = prefix
            log(f"  {out_dir.name}: the first {first:,} products copied from {where}")
            for name, fh, sha in (("meta.jsonl.gz", meta_fh, meta_sha), ("reviews.jsonl.gz", rev_fh, rev_sha)):
                with open(where / name, "rb") as src:
                    while chunk := src.read(1 << 24):
                        fh.write(chunk)
                        sha.update(chunk)
                raw[name] += done["files"][name]["uncompressed_bytes"]
            n_reviews += done["reviews"]
        for k, (m, r, m_raw, r_raw, r_count) in enumerate(ex.map(_block, jobs, chunksize=1), 1):
            meta_fh.write(m)
            meta_sha.update(m)
            if r:
                rev_fh.write(r)
                rev_sha.update(r)
            raw["meta.jsonl.gz"] += m_raw
            raw["reviews.jsonl.gz"] += r_raw
            n_reviews += r_count
            if k % 10 == 0 or k == len(jobs):
                log(f"  {out_dir.name}: {min(first + k * BLOCK, n):,}/{n:,} products "
                    f"({time.perf_counter() - t0:.0f} s)")
        if n_reviews == 0:  # an empty gzip stream, so the file is still valid gzip
            empty = _gzip_member(b"")
            rev_fh.write(empty)
            rev_sha.update(empty)
    for name, path in tmp.items():
        os.replace(path, out_dir / name)
    done = {**want, "reviews": n_reviews, "seconds": round(time.perf_counter() - t0, 1),
            "files": {"meta.jsonl.gz": {"bytes": (out_dir / "meta.jsonl.gz").stat().st_size,
                                        "uncompressed_bytes": raw["meta.jsonl.gz"], "sha256": meta_sha.hexdigest()},
                      "reviews.jsonl.gz": {"bytes": (out_dir / "reviews.jsonl.gz").stat().st_size,
                                           "uncompressed_bytes": raw["reviews.jsonl.gz"],
                                           "sha256": rev_sha.hexdigest()}}}
    marker.write_text(json.dumps(done, indent=2) + "\n")
    return done


def _prefix(out_dir: Path, n: int, want: dict) -> tuple[Path, dict] | None:
    """The largest catalog generated beside `out_dir` with the same parameters, whole blocks and fewer products.

    Returns:
        (its folder, its generated.json) or None.
    """
    best: tuple[Path, dict] | None = None
    for marker in out_dir.parent.glob("*/generated.json"):
        if marker.parent == out_dir:
            continue
        try:
            done = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        m = done.get("products", 0)
        same = all(done.get(k) == v for k, v in want.items() if k != "products")
        files_ok = all((marker.parent / f).is_file() and (marker.parent / f).stat().st_size == info["bytes"]
                       for f, info in done.get("files", {}).items())
        if (same and files_ok and 0 < m < n and m % BLOCK == 0 and done.get("reviews", 0) > 0
                and (best is None or m > best[1]["products"])):
            best = (marker.parent, done)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k", help="comma-separated sizes, e.g. 100k,1m,3.7m")
    parser.add_argument("--out", type=Path, default=Path("/work/scale-data/generated"),
                        help="root folder; each size goes to <out>/<size>/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--verify", action="store_true", help="re-hash existing files before reusing them")
    args = parser.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError as exc:
        sys.exit(f"error: --sizes: {exc}")
    for n in sizes:
        done = generate(n, args.out / size_label(n), seed=args.seed, workers=args.workers, verify=args.verify)
        print(f"{size_label(n)}: {done['products']:,} products, {done['reviews']:,} reviews, "
              f"meta {done['files']['meta.jsonl.gz']['bytes'] / 1e6:,.0f} MB gz "
              f"({done['files']['meta.jsonl.gz']['uncompressed_bytes'] / 1e6:,.0f} MB raw), {done['seconds']} s")


if __name__ == "__main__":
    main()
