"""The build configuration's hash covers everything that decides a split's content."""

from __future__ import annotations

import flows.settings as settings
from flows.settings import BuildConfig


def test_editing_a_data_table_changes_the_config_hash(monkeypatch):
    config = BuildConfig(catalog="x")
    before = config.config_hash("fp")
    real = settings.data_tables_sha256()
    monkeypatch.setattr(settings, "data_tables_sha256", lambda: {**real, "fields.toml": "0" * 64})
    assert config.config_hash("fp") != before


def test_where_the_catalog_lies_and_batch_size_do_not_change_the_hash():
    a = BuildConfig(catalog="/a", batch_size=10)
    b = BuildConfig(catalog="/b", batch_size=99)
    assert a.config_hash("fp") == b.config_hash("fp")
    assert a.config_hash("fp") != a.config_hash("other-fingerprint")


def test_every_data_table_is_hashed():
    assert set(settings.data_tables_sha256()) == {"fields.toml", "intents.toml", "cues.toml", "persona_vocab.toml"}
