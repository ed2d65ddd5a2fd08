"""Detail values that depend on the product type: implied by it, or a requirement only for some types.

Rows in tables/type_values.toml; `type_value_problem` is what stage 2 (ecombench.stages.features.extract_features) and
the exclusions (ecombench.validation.semantic.biting_exclusions) ask of each option. A value of a form-or-use field
that names only the type (ecombench.stages.product_naming.restates_the_type) is the third case.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from ecombench.errors import SettingError
from ecombench.lemmas import lemmas
from ecombench.stages.product_naming import restates_the_type, type_words
from ecombench.text import normalize, tokens

TYPE_VALUE_TABLE = Path(__file__).resolve().parent.parent / "tables" / "type_values.toml"


@lru_cache(maxsize=4)
def load_type_values(path: str | None = None) -> dict[tuple[str, str], tuple[str, frozenset[str]]]:
    """{(canonical field, normalised value): ("implied_by" or "said_only_of", noun lemmas)}.

    Raises:
        SettingError: a row lacks its field or value, or has neither or both lists (the message names the
            file and the row).
    """
    src = Path(path) if path else TYPE_VALUE_TABLE
    rows = tomllib.loads(src.read_text(encoding="utf-8")).get("value", [])
    out: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
    for i, row in enumerate(rows, 1):
        field, value = row.get("field"), row.get("value")
        kinds = [k for k in ("implied_by", "said_only_of") if row.get(k)]
        if not field or not value or len(kinds) != 1:
            raise SettingError(f"{src}: value {i} ({field!r} = {value!r}): needs field, value and one of "
                               "implied_by, said_only_of")
        nouns = frozenset(lem for w in row[kinds[0]] for t in tokens(w) for lem in lemmas(t))
        out[(field, normalize(value))] = (kinds[0], nouns)
    return out


def type_value_problem(field: str, value: str, entity: str) -> str | None:
    """Why `value` of detail `field` is no requirement for a product of type `entity`, or None.

    Args:
        field: detail key ("Shape") or rubric field ("details.Shape").
        value: the clean option ("Round").
        entity: the product type ("Coffee Mugs").

    Returns:
        "names_product_type" (ecombench.stages.product_naming.restates_the_type: form factor "Case" of a case),
        "implied_by_product_type" (Shape "Round" of a mug), "not_said_of_product_type" (Age Range "Adult" of
        a chair), or None.
    """
    if restates_the_type(field, value, entity):
        return "names_product_type"
    rule = load_type_values().get((field.removeprefix("details."), normalize(value)))
    if rule is None:
        return None
    kind, nouns = rule
    named = bool(type_words(entity) & nouns)
    if kind == "implied_by":
        return "implied_by_product_type" if named else None
    return None if named else "not_said_of_product_type"
