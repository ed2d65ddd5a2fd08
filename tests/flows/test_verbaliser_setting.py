"""The verbaliser setting (issue #14): template-v2 by default, template-v1 selectable and hashed as before."""

from __future__ import annotations

from ecombench.pipeline.candidate import verbaliser_id
from ecombench.pipeline.config import BuildConfig


def test_template_v2_is_the_default():
    config = BuildConfig(catalog="c")
    assert config.verbaliser == "template-v2" and verbaliser_id(config) == "template-v2"


def test_template_v1_is_stored_under_its_first_name_so_older_splits_keep_their_config_hash():
    old = BuildConfig(catalog="c", verbaliser="template")  # the manifest config of a split built before v2
    chosen = BuildConfig(catalog="c", verbaliser="template-v1")
    assert chosen.verbaliser == "template" and chosen.config_hash("fp") == old.config_hash("fp")
    assert verbaliser_id(chosen) == "template-v1"


def test_the_two_template_verbalisers_hash_differently():
    v1 = BuildConfig(catalog="c", verbaliser="template-v1")
    assert BuildConfig(catalog="c").config_hash("fp") != v1.config_hash("fp")
