"""The data tables and their loaders: the field table, intents and cues (reviewed TOML beside each loader)."""

from pathlib import Path

from ecombench.hashing import sha256_hex

TABLES_DIR = Path(__file__).resolve().parent
# The data tables that decide a split's content (their sha256 goes into the build's config hash).
DATA_TABLES = ("fields.toml", "intents.toml", "cues.toml", "persona_vocab.toml", "product_types.toml",
               "type_values.toml")


def tables_sha256() -> dict[str, str]:
    """sha256 of each data table in ecombench/tables/ that decides a split's content, by file name."""
    return {name: sha256_hex((TABLES_DIR / name).read_bytes()) for name in DATA_TABLES}
