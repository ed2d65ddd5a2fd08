"""Intent definitions (intents.toml) as typed data, looked up by name."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ecombench.errors import SettingError

INTENT_TABLE = Path(__file__).with_name("intents.toml")


@dataclass(frozen=True)
class IntentSpec:
    """One intent: sampling eligibility, which features it draws and what it must contain.

    Attributes mirror the keys documented at the top of intents.toml.
    """

    name: str
    description: str
    min_detail_fields: int = 3
    min_average_rating: float | None = None
    min_rating_number: int | None = None
    require_price: bool = False
    numeric_fields: tuple[str, ...] = ("price", "average_rating", "rating_number")
    query_fields: tuple[str, ...] = ()
    min_query_attributes: int = 0
    min_query_fields: int = 0
    max_features: int = 10
    negative_fields: tuple[str, ...] = ()
    negatives: int = 0
    voucher: bool = False
    review_opinions: int = 0
    min_reviews: int = 0
    implicit: int = 0
    min_hidden_answer_set: int | None = None  # overrides BuildConfig.min_hidden_answer_set for this intent
    min_hidden_division: int | None = None  # overrides BuildConfig.min_hidden_division for this intent
    max_implicit: int = 0  # up to this many implicit requirements where cues allow; at least `implicit`
    cue_kind: str = "knowledge"
    required_types: tuple[str, ...] = ()
    min_query: int | None = None
    min_persona: int | None = None
    min_clarification: int | None = None
    min_query_answer_set: int | None = None

    def split_overrides(self) -> dict[str, int]:
        """This intent's overrides of the build's split minimums (for SplitConfig.model_copy(update=...))."""
        return {k: getattr(self, k) for k in ("min_query", "min_persona", "min_clarification")
                if getattr(self, k) is not None}


@lru_cache(maxsize=8)
def load_intents(path: str | None = None) -> dict[str, IntentSpec]:
    """Read the intent table.

    Args:
        path: a TOML file in the intents.toml format; None reads the bundled one.

    Raises:
        SettingError: an entry has an unknown key (names the file and the intent).
    """
    src = Path(path) if path else INTENT_TABLE
    data = tomllib.loads(src.read_text(encoding="utf-8"))
    known = set(IntentSpec.__dataclass_fields__) - {"name"}
    out: dict[str, IntentSpec] = {}
    for name, row in data.get("intents", {}).items():
        unknown = set(row) - known
        if unknown:
            raise SettingError(f"{src}: intent {name!r} has unknown keys {sorted(unknown)}")
        row = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
        spec = IntentSpec(name=name, **row)
        if spec.cue_kind not in ("knowledge", "scenario"):
            raise SettingError(f"{src}: intent {name!r} has cue_kind {spec.cue_kind!r}; use knowledge or scenario")
        out[name] = spec
    return out
