"""What a catalog's compatibility labels say of devices: spellings per device, and the makers' series they name.

For one catalog snapshot, over the options of its compatibility fields (field table `compatibility = true`):

- how many options name a device model (ecombench.catalog.devices.device_models) and how many distinct spellings
  and distinct devices those are;
- the devices spelled most ways, with their spellings;
- per maker word, the series its labels name after it (`learn_maker_series`) beside the reviewed `MAKER_SERIES`.

Usage: benchmarks/device_models.py CATALOG_DIR [--show 10]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import polars as pl

from ecombench.catalog.details import detail_rows, split_options
from ecombench.catalog.devices import MAKER_SERIES, device_models, learn_maker_series, spell_plus
from ecombench.tables.fields import load_field_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("catalog", type=Path)
    ap.add_argument("--show", type=int, default=10)
    args = ap.parse_args()
    table = load_field_table()
    compat = {s.name: s for s in table.detail_fields() if s.compatibility}
    products = pl.read_parquet(args.catalog / "products.parquet", columns=["parent_asin", "details"])
    rows = detail_rows(products, table).filter(pl.col("key").is_in(list(compat)))
    options = [spell_plus(o.strip()) for key, value in rows.select("key", "value").iter_rows()
               for o in split_options(compat[key], value) if o.strip()]
    spellings: dict[tuple[str, str, tuple[str, ...]], set[str]] = defaultdict(set)
    naming = 0
    for option in options:
        devices = device_models(option)
        naming += bool(devices)
        if len(devices) == 1:
            d = devices[0]
            spellings[(d.series, d.model, d.variant)].add(option)
    print(f"{len(options)} compatibility options, {naming} name a device model "
          f"({100 * naming / max(len(options), 1):.1f} %)")
    single = {o for s in spellings.values() for o in s}
    print(f"options naming one device: {len(single)} distinct spellings of {len(spellings)} devices")
    for key, spelled in sorted(spellings.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:args.show]:
        print(f"    {' '.join([key[0], key[1], *key[2]]).strip()}: {sorted(spelled)}")
    learned = learn_maker_series(options)
    print("maker -> series its labels name (reviewed table in brackets):")
    for maker, counts in sorted(learned.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(counts.values())
        top, n = counts.most_common(1)[0]
        print(f"    {maker}: {top} {n} of {total} [{MAKER_SERIES[maker] or '(maker name)'}]")


if __name__ == "__main__":
    main()
