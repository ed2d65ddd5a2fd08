"""Values a shopper would state: the catalog's shared vocabulary, never placeholders or a product's own model.

Amazon detail values are free text, and the rarest are the noisiest: one-off brand strings
("ShiQiao Spl"), marketing phrases as colours ("To My Man"), the fitted device as a colour
("EERO 6 WIFI"), placeholders ("Random color", "N / A", "Artist Unknown"), packaging ("100 Count
(Pack of 1)") and degenerate ranges ("6 - 6 months"). A requirement on such a value is one rare
string that singles the target out, not a need a person states. `value_problems`
says why a value is unusable; stage 2 drops such values before any draw.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ecombench.catalog.devices import names_device
from ecombench.tables.fields import FieldSpec
from ecombench.text import normalize, tokens

# Default of BuildConfig.min_value_support, from the measurement in the closing note: of 1,378
# attribute rubrics in the tasks of a build over all shared data, 290 had a value no other catalog
# product carries and 75 one other product carries (mostly one-off brand strings and marketing
# colours); from 3 products on values are mostly real brands, models and specs.
MIN_VALUE_SUPPORT = 3

# Words that make any value a placeholder wherever they stand ("Random color", "Other Manufacturer",
# "Artist Unknown"): the field table's placeholders match whole values only.
PLACEHOLDER_WORDS = frozenset({"unknown", "other", "others", "generic", "assorted", "random", "unbranded",
                               "various", "misc", "miscellaneous", "unspecified", "unbrand", "nobrand"})
PLACEHOLDER_PHRASES = ("n a", "n c", "see description", "as shown", "as picture", "as pictured", "see picture",
                       "not applicable", "no brand", "see image", "refer to", "please see")
# Words of marketing copy, not of a description: "Premium Unframed Version" as a colour, "Upgraded" as a style.
MARKETING_WORDS = frozenset({"version", "premium", "edition", "upgraded", "upgrade", "latest", "gift", "bonus"})
# Whole values that every seller claims, marketing in any field: "Durable" is the Special Feature the most products
# of the shared data state (519, of 283 product types), and a reviewer of the shared build read it on pillow
# covers, mugs and a stool cover as saying nothing (5 of its 22 meaningless rubrics).
# "Fashion" likewise: as a Theme or Style it is the title's marketing adjective ("Classic Fashion Protector", "Slim
# Fashion Custom Cover"); 113 of the shared products' 128 Theme or Style facts "Fashion" are text only, and three
# reviewers of shared builds read all 8 rubrics drawn from it as false.
CLAIM_VALUES = frozenset({"durable", "sturdy", "easy to use", "high quality", "premium quality", "fashion"})
# Details naming the product's own model: a value of another field that repeats one is a model, not a need.
MODEL_KEYS = ("Model Name", "Item model number", "Manufacturer Part Number", "Series", "Model Number", "Model")
_DEGENERATE_RANGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:-|to)\s*\1\b")
_PACKAGING = re.compile(r"\bpack of\b|\bcount \(|\(pack\b", re.IGNORECASE)


def value_problems(spec: FieldSpec, value: str, support: int | None, product: dict[str, Any] | None = None,
                   min_support: int = MIN_VALUE_SUPPORT) -> list[str]:
    """Why `value` of field `spec` is not a requirement a shopper would state (empty: it is).

    A compatibility value naming a device model (ecombench.catalog.devices.names_device) is neither a model_value
    nor a rare_value: it is the phone the shopper owns, and a case lists that phone as its own "Model Name".

    Args:
        spec: the canonical field.
        value: a clean option (ecombench.catalog.details.clean_value).
        support: how many catalog products carry the value in this field (CatalogIndex.support of its
            attribute rubric); None skips the vocabulary rule.
        product: the target product row, for its own model names.
        min_support: the fewest products that must carry the value.

    Returns:
        Reason codes, of placeholder_value, marketing_value, degenerate_range, packaging_value, model_value,
        rare_value.

    Example:
        >>> from ecombench.tables.fields import load_field_table
        >>> value_problems(load_field_table().fields["Color"], "Random color", 2)
        ['placeholder_value', 'rare_value']
    """
    out = []
    norm = normalize(value)
    words = set(tokens(value))
    padded = f" {norm} "
    if words & PLACEHOLDER_WORDS or any(f" {p} " in padded for p in PLACEHOLDER_PHRASES):
        out.append("placeholder_value")
    if (spec.descriptive and words & MARKETING_WORDS) or norm in CLAIM_VALUES:
        out.append("marketing_value")
    if _DEGENERATE_RANGE.match(value):
        out.append("degenerate_range")
    if _PACKAGING.search(value):
        out.append("packaging_value")
    device = spec.compatibility and names_device(value)  # the shopper's own phone, however few products fit it
    if product is not None and spec.name not in MODEL_KEYS and not device:  # a case's "Model Name" is its phone
        models = [normalize(d["value"]) for d in product.get("details") or []
                  if d.get("key") in MODEL_KEYS and d.get("value")]
        if any(m and (m == norm or (len(m) >= 4 and f" {m} " in padded)) for m in models):
            out.append("model_value")
    if support is not None and support < min_support and not device:
        out.append("rare_value")
    return out


def usable_values(spec: FieldSpec, values: list[str], support: Callable[[str, str], int] | None,
                  product: dict[str, Any] | None, min_support: int) -> tuple[list[str], dict[str, str]]:
    """The values of `values` without problems, and {value: first problem} for the others."""
    kept, rejected = [], {}
    for v in values:
        problems = value_problems(spec, v, None if support is None else support(spec.rubric_field, v), product,
                                  min_support)
        if problems:
            rejected[v] = problems[0]
        else:
            kept.append(v)
    return kept, rejected
