"""Every SFT recipe is valid for LLaMA-Factory 0.9.5 without training: known keys, registered template,
listed datasets, an existing DeepSpeed config, and the paper's settings in the full-size recipes."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from sft_fixtures import REPO

RECIPES = sorted((REPO / "recipes").glob("sft_*.yaml"))
PAPER_RECIPES = ["sft_8b.yaml", "sft_30b_a3b.yaml", "sft_32b.yaml"]


def known_keys() -> set[str]:
    from llamafactory.hparams.parser import _TRAIN_ARGS

    return {f.name for cls in _TRAIN_ARGS for f in dataclasses.fields(cls)}


def test_the_expected_recipes_exist():
    names = {p.name for p in RECIPES}
    assert set(PAPER_RECIPES + ["sft_smoke.yaml", "sft_qwen25vl_7b.yaml"]) <= names


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_recipe_is_valid_for_llamafactory(recipe):
    from llamafactory.data.template import TEMPLATES

    text = recipe.read_text()
    config = yaml.safe_load(text)
    unknown = sorted(set(config) - known_keys())
    assert not unknown, f"{recipe.name}: keys LLaMA-Factory would reject: {unknown}"
    assert config["template"] in TEMPLATES
    info = json.loads((REPO / config["dataset_dir"] / "dataset_info.json").read_text())
    for name in config["dataset"].split(","):
        assert name.strip() in info
    if "deepspeed" in config:
        ds = json.loads((REPO / config["deepspeed"]).read_text())
        assert ds["zero_optimization"]["stage"] == 3
    header = text.split("\n###", 1)[0]
    assert "Command" in header and "llamafactory-cli train recipes/" + recipe.name in header
    assert "Example override" in header and "Prerequisites" in header


@pytest.mark.parametrize("name", PAPER_RECIPES)
def test_paper_settings(name):
    config = yaml.safe_load((REPO / "recipes" / name).read_text())
    expected = {
        "finetuning_type": "full",
        "freeze_vision_tower": False,
        "freeze_multi_modal_projector": False,
        "bf16": True,
        "learning_rate": 2.0e-5,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.1,
        "num_train_epochs": 8.0,
        "per_device_train_batch_size": 1,
        "gradient_checkpointing": True,
        "cutoff_len": 32000,
        "image_max_pixels": 262144,
        "template": "qwen3_vl_agentic_nothink",
    }
    assert {k: config[k] for k in expected} == expected


def test_recipe_values_parse_into_llamafactory_dataclasses():
    """The values (not just the keys) of the CPU-runnable smoke recipe bind to the upstream dataclasses."""
    from llamafactory.hparams.parser import _TRAIN_ARGS
    from transformers import HfArgumentParser

    config = yaml.safe_load((REPO / "recipes/sft_smoke.yaml").read_text())
    config["output_dir"] = "/tmp/unused"
    model_args, data_args, training_args, finetuning_args, _ = HfArgumentParser(_TRAIN_ARGS).parse_dict(
        config
    )
    assert data_args.template == "qwen3_vl_agentic_nothink"
    assert finetuning_args.finetuning_type == "full"
    assert model_args.image_max_pixels == 65536


def test_dataset_info_lists_the_seven_subsets_with_relative_paths():
    info = json.loads((REPO / "recipes/data/dataset_info.json").read_text())
    subsets = [n for n in info if n.endswith("_agent_sft")]
    assert len(subsets) == 7
    for name in info:
        assert not info[name]["file_name"].startswith("/")
        assert info[name]["formatting"] == "sharegpt"
        assert info[name]["columns"]["tools"] == "tools"
