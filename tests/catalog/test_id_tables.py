"""The numpy id tables answer exactly as the dicts they replace, for Amazon ids and any other string."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from ecombench.catalog.id_tables import ContentCopies, IdTable, asin_codes, code_counts, counts_of


def test_asin_codes_are_exact_for_amazon_ids_and_refuse_the_rest():
    ids = ["B0BM23T7MM", "B07HKK3LPK", "0000000000", "ZZZZZZZZZZ",
           "b0bm23t7mm", "B0BM23T7M", "B0BM23T7MMX", "B0BM-3T7MM"]
    codes, ok = asin_codes(ids)
    assert ok.tolist() == [True, True, True, True, False, False, False, False]
    assert codes[2] == 0 and codes[3] == 36**10 - 1
    assert codes[0] == int("B0BM23T7MM", 36) and codes[1] == int("B07HKK3LPK", 36)
    sliced = pa.array(["X", *ids]).slice(1)  # an offset into the buffers
    assert asin_codes(sliced)[0][ok].tolist() == codes[ok].tolist()


def test_the_id_table_keeps_the_first_of_equal_ids_like_a_dict():
    rng = random.Random(7)
    pool = [f"B{rng.randrange(10**9):09d}" for _ in range(300)] + ["short", "b0lower0001", "B0BM23T7MM", " x "]
    table, seen = IdTable(), {}
    for _ in range(40):
        batch = [rng.choice(pool) for _ in range(rng.randrange(0, 60))]
        new = table.add_new(batch)
        expected = []
        for asin in batch:
            expected.append(asin not in seen)
            seen.setdefault(asin, len(seen))
        assert new.tolist() == expected
        probe = [rng.choice(pool) for _ in range(30)]
        assert table.lookup(probe).tolist() == [seen.get(a, -1) for a in probe]
    assert table.size == len(seen)


def test_content_copies_number_every_copy_in_claim_order():
    rng = random.Random(3)
    keys = [bytes([rng.randrange(4)]) * 32 for _ in range(500)]
    copies, seen = ContentCopies(), {}
    at = 0
    while at < len(keys):
        step = rng.randrange(1, 50)
        got = copies.occurrences(keys[at:at + step]).tolist()
        want = []
        for k in keys[at:at + step]:
            want.append(seen.get(k, 0))
            seen[k] = seen.get(k, 0) + 1
        assert got == want
        at += step


def test_code_counts_count_each_code():
    distinct, counts = code_counts([np.array([5, 3, 5]), np.array([3, 9, 5])])
    assert counts_of(np.array([5, 3, 9, 4]), distinct, counts).tolist() == [3, 2, 1, 0]
