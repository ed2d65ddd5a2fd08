"""The id tables of ingestion's cross-record rules as numpy arrays, not Python dicts.

Ingest remembers every product id it has written (first occurrence wins, reviews need their product), each
product's review count and, per distinct review content, how many copies it has seen. As Python dicts these
cost about 100 bytes per product and 70 per review (1.8 GB at 10M products); here they cost 12 bytes per
product and 16 per distinct review content.

An Amazon id (`parent_asin`: 10 characters of 0-9 / A-Z) is read as a base-36 number, which is exact: two ids
have the same code only when they are the same string. Any other id (other lengths, lower case, other
characters) is kept in a small Python dict beside, so the tables answer exactly for every string.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ASIN_CHARS = 10
# Byte -> base-36 digit (0-9, A-Z), -1 for any other byte.
_DIGIT = np.full(256, -1, dtype=np.int64)
_DIGIT[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10)
_DIGIT[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype=np.uint8)] = np.arange(10, 36)
_POWERS = 36 ** np.arange(ASIN_CHARS - 1, -1, -1, dtype=np.int64)


def asin_codes(ids: Sequence[str] | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Each id as its base-36 code when it is 10 characters of 0-9 / A-Z.

    Args:
        ids: n ids (strings, none null).

    Returns:
        (codes, ok): int64 codes (36**10 < 2**52, so every code is distinct per id) and a bool mask of the ids
        that have one; where `ok` is False the code is meaningless (the caller keeps those ids as strings).
    """
    arr = ids if isinstance(ids, pa.Array) else pa.array(ids, pa.string())
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    arr = arr.cast(pa.large_binary())
    lengths = pc.binary_length(arr).to_numpy(zero_copy_only=False)
    ok = lengths == ASIN_CHARS
    codes = np.zeros(n, dtype=np.int64)
    if not ok.any():
        return codes, ok
    fixed = arr if ok.all() else arr.filter(pa.array(ok))
    offsets = np.frombuffer(fixed.buffers()[1], dtype=np.int64)[fixed.offset:fixed.offset + len(fixed) + 1]
    data = np.frombuffer(fixed.buffers()[2], dtype=np.uint8)
    # Every kept id is exactly 10 bytes, so its bytes are data[offsets[i] : offsets[i] + 10].
    chars = data[offsets[:-1, None] + np.arange(ASIN_CHARS)]
    digits = _DIGIT[chars]
    good = (digits >= 0).all(axis=1)
    where = np.flatnonzero(ok)
    codes[where] = digits.clip(0) @ _POWERS
    ok[where[~good]] = False
    return codes, ok


class SortedRuns:
    """A map of distinct int64 keys to int64 values, kept as a few sorted arrays (a log-structured merge).

    `add` appends a sorted run; runs of similar size are merged, so there are at most about log2(n) of them
    and each key is copied O(log n) times in all. Memory: 16 bytes per key, plus one run's copy while merging.
    """

    def __init__(self) -> None:
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []
        self.size = 0

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where each key is stored.

        Returns:
            (found, run, position): bool mask, and for found keys the run number and position within it.
        """
        found = np.zeros(len(keys), dtype=bool)
        run_of = np.full(len(keys), -1, dtype=np.int64)
        pos_of = np.zeros(len(keys), dtype=np.int64)
        for r, (rk, _) in enumerate(self._runs):
            if not len(keys) or not len(rk):
                continue
            pos = np.searchsorted(rk, keys)
            hit = (pos < len(rk)) & ~found
            hit[hit] = rk[pos[hit]] == keys[hit]
            found |= hit
            run_of[hit] = r
            pos_of[hit] = pos[hit]
        return found, run_of, pos_of

    def get(self, keys: np.ndarray, default: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, values) of `keys`; `default` where not found."""
        found, run_of, pos_of = self.find(keys)
        values = np.full(len(keys), default, dtype=np.int64)
        for r, (_, rv) in enumerate(self._runs):
            sel = run_of == r
            if sel.any():
                values[sel] = rv[pos_of[sel]]
        return found, values

    def increment(self, keys: np.ndarray, by: np.ndarray) -> None:
        """Add `by` to the values of `keys`, which must all be stored and distinct."""
        found, run_of, pos_of = self.find(keys)
        assert found.all(), "increment: a key is not stored"
        for r, (_, rv) in enumerate(self._runs):
            sel = run_of == r
            if sel.any():
                rv[pos_of[sel]] += by[sel]

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Store new keys (distinct, none stored yet) with their values."""
        if not len(keys):
            return
        order = np.argsort(keys, kind="stable")
        self._runs.append((keys[order].astype(np.int64), values[order].astype(np.int64)))
        self.size += len(keys)
        while len(self._runs) > 1 and len(self._runs[-2][0]) <= 2 * len(self._runs[-1][0]):
            (k1, v1), (k2, v2) = self._runs[-2], self._runs.pop()
            merged_k = np.concatenate([k1, k2])
            order = np.argsort(merged_k, kind="stable")
            self._runs[-1] = (merged_k[order], np.concatenate([v1, v2])[order])


class IdTable:
    """Product ids -> their ordinal (0, 1, ... in the order first added), exact for any string.

    Attributes:
        size: ids stored.
    """

    def __init__(self) -> None:
        self._codes = SortedRuns()
        self._other: dict[str, int] = {}
        self.size = 0

    def lookup(self, ids: Sequence[str] | pa.Array) -> np.ndarray:
        """Each id's ordinal, -1 where it is not stored."""
        return self._lookup(ids, *asin_codes(ids))

    def _lookup(self, ids: Sequence[str] | pa.Array, codes: np.ndarray, ok: np.ndarray) -> np.ndarray:
        out = np.full(len(codes), -1, dtype=np.int64)
        if ok.any():
            found, values = self._codes.get(codes[ok], -1)
            out[ok] = np.where(found, values, -1)
        if not ok.all():
            pylist = ids.to_pylist() if isinstance(ids, pa.Array) else ids
            for i in np.flatnonzero(~ok).tolist():
                out[i] = self._other.get(pylist[i], -1)
        return out

    def add_new(self, ids: Sequence[str] | pa.Array) -> np.ndarray:
        """Store the ids not stored yet, in order (the first of equal ids in `ids` wins).

        Returns:
            Bool mask of the ids that were new (False for ids stored before or repeated earlier in `ids`).
        """
        codes, ok = asin_codes(ids)
        known = self._lookup(ids, codes, ok) >= 0
        new = ~known
        # Within the batch only the first of equal ids is new.
        coded = np.flatnonzero(ok & new)
        if len(coded):
            _, first = np.unique(codes[coded], return_index=True)
            later = np.ones(len(coded), dtype=bool)
            later[first] = False
            new[coded[later]] = False
        pylist = None
        seen_other: set[str] = set()
        for i in np.flatnonzero(~ok & new).tolist():
            pylist = pylist if pylist is not None else (ids.to_pylist() if isinstance(ids, pa.Array) else ids)
            if pylist[i] in seen_other:
                new[i] = False
            seen_other.add(pylist[i])
        # Ordinals in batch order, coded and other ids interleaved as they come.
        ordinals = self.size + np.cumsum(new) - 1
        add = np.flatnonzero(ok & new)
        self._codes.add(codes[add], ordinals[add])
        for i in np.flatnonzero(~ok & new).tolist():
            assert pylist is not None
            self._other[pylist[i]] = int(ordinals[i])
        self.size += int(new.sum())
        return new


class ContentCopies:
    """How many copies of each review content have been seen, by the first 8 bytes of its sha256 content key.

    A prefix collision only bumps an occurrence number: ids stay unique and deterministic.
    """

    def __init__(self) -> None:
        self._seen = SortedRuns()

    def occurrences(self, keys: Sequence[bytes]) -> np.ndarray:
        """Each key's occurrence number (copies seen before it, earlier in `keys` included); counts them in.

        Args:
            keys: content keys (at least 8 bytes each), in claim order.

        Returns:
            int64 occurrence per key (0 for the first copy).
        """
        if not keys:
            return np.zeros(0, dtype=np.int64)
        prefixes = np.frombuffer(b"".join(k[:8] for k in keys), dtype=">i8").astype(np.int64)
        order = np.argsort(prefixes, kind="stable")
        ranked = prefixes[order]
        starts = np.r_[True, ranked[1:] != ranked[:-1]]
        group = np.cumsum(starts) - 1
        first_pos = np.flatnonzero(starts)
        rank = np.arange(len(ranked)) - first_pos[group]
        distinct = ranked[starts]
        per_group = np.diff(np.r_[first_pos, len(ranked)])
        found, before = self._seen.get(distinct, 0)
        occurrence = np.empty(len(prefixes), dtype=np.int64)
        occurrence[order] = before[group] + rank
        if found.any():
            self._seen.increment(distinct[found], per_group[found])
        self._seen.add(distinct[~found], per_group[~found])
        return occurrence


def code_counts(chunks: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct codes (sorted) and how often each occurs over all chunks."""
    if not chunks:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(chunks), return_counts=True)


def counts_of(codes: np.ndarray, distinct: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`counts` of each code in `distinct` (sorted), 0 for a code not among them."""
    if not len(distinct):
        return np.zeros(len(codes), dtype=np.int64)
    pos = np.searchsorted(distinct, codes).clip(0, len(distinct) - 1)
    return np.where(distinct[pos] == codes, counts[pos], 0)
