"""The build configuration's hash covers everything that decides a split's content."""

from __future__ import annotations

import ecombench.pipeline.config as settings
from ecombench.pipeline.config import BuildConfig


def test_editing_a_data_table_changes_the_config_hash(monkeypatch):
    config = BuildConfig(catalog="x")
    before = config.config_hash("fp")
    real = settings.tables_sha256()
    monkeypatch.setattr(settings, "tables_sha256", lambda: {**real, "fields.toml": "0" * 64})
    assert config.config_hash("fp") != before


def test_where_the_catalog_lies_and_batch_size_do_not_change_the_hash():
    a = BuildConfig(catalog="/a", batch_size=10)
    b = BuildConfig(catalog="/b", batch_size=99)
    assert a.config_hash("fp") == b.config_hash("fp")
    assert a.config_hash("fp") != a.config_hash("other-fingerprint")


def test_every_data_table_is_hashed():
    assert set(settings.tables_sha256()) == {"fields.toml", "intents.toml", "cues.toml", "persona_vocab.toml",
                                                  "product_types.toml", "type_values.toml"}


def test_the_llm_settings_of_a_build_come_from_its_config(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ECOMBENCH_LLM_MODEL", raising=False)
    config = BuildConfig(catalog="x", verbaliser="llm", llm_model="m", llm_base_url="http://127.0.0.1:1/v1",
                         llm_temperature=0.3, llm_max_tokens=99, llm_seed=7, llm_timeout=5, llm_max_retries=1,
                         llm_concurrency=3, llm_response_format="text")
    s = config.llm_settings(tmp_path)
    assert (s.model, s.base_url, s.temperature, s.max_tokens, s.seed, s.timeout, s.max_retries, s.concurrency,
            s.response_format) == ("m", "http://127.0.0.1:1/v1", 0.3, 99, 7, 5, 1, 3, "text")
    assert s.cache_dir == str(tmp_path / "cache" / "llm")


def test_every_llm_setting_of_the_config_reaches_the_client():
    from ecombench.llm import LLMSettings

    config_fields = {n.removeprefix("llm_") for n in BuildConfig.model_fields if n.startswith("llm_")}
    assert config_fields - {"parts"} <= set(LLMSettings.__dataclass_fields__)  # llm_parts is the verbaliser's
