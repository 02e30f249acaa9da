"""Shared fixtures for the SFT tests: one tiny Qwen3-VL checkpoint per session, tiny PNG images."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny random Qwen3-VL checkpoint (built locally in a few seconds)."""
    from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl

    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny-qwen3vl"), seed=0)


@pytest.fixture(scope="session")
def lf_tokenizer_and_processor(tiny_model):
    """Tokenizer and processor loaded (and patched) by LLaMA-Factory's own loader, as in training."""
    from llamafactory.hparams import ModelArguments
    from llamafactory.model import load_tokenizer

    loaded = load_tokenizer(ModelArguments(model_name_or_path=str(tiny_model), image_max_pixels=65536))
    return loaded["tokenizer"], loaded["processor"]
