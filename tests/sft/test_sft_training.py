"""The smoke recipe really trains through plain `llamafactory-cli train` (in-process and torchrun), the saved
model reloads and generates, and an over-length sample is refused instead of truncated through an image."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from sft_fixtures import REPO, lf_env

pytestmark = pytest.mark.slow


def train(tiny_model, out_dir, *overrides, extra_env=None, timeout=240):
    env = lf_env()
    env.update(extra_env or {})
    args = [
        "llamafactory-cli",
        "train",
        "recipes/sft_smoke.yaml",
        f"model_name_or_path={tiny_model}",
        f"output_dir={out_dir}",
        *overrides,
    ]
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def losses(out_dir):
    rows = [
        json.loads(line) for line in (out_dir / "trainer_log.jsonl").read_text().splitlines() if line.strip()
    ]
    return [row["loss"] for row in rows if "loss" in row]


def test_smoke_recipe_trains_and_the_model_reloads_and_generates(tiny_model, tmp_path):
    out = tmp_path / "sft_smoke"
    proc = train(tiny_model, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    curve = losses(out)
    assert len(curve) == 12
    assert curve[-1] < curve[0] - 1.0, curve
    assert sum(curve[-3:]) / 3 < sum(curve[:3]) / 3

    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(out)
    processor = AutoProcessor.from_pretrained(out)
    prompt = (
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What color?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    from PIL import Image

    inputs = processor(
        text=[prompt],
        images=[Image.open(REPO / "recipes/data/sample/images/scene_0.png")],
        return_tensors="pt",
    )
    with torch.no_grad():
        generated = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    new_tokens = generated[0, inputs["input_ids"].shape[1] :]
    assert 1 <= new_tokens.numel() <= 8
    assert isinstance(processor.decode(new_tokens), str)


def test_torchrun_workers_see_the_plugin_templates(tiny_model, tmp_path):
    out = tmp_path / "sft_torchrun"
    proc = train(tiny_model, out, "max_steps=3", extra_env={"FORCE_TORCHRUN": "1", "NPROC_PER_NODE": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    assert "world size: 2" in log
    curve = losses(out)
    assert len(curve) == 3 and curve[-1] < curve[0]


def test_over_length_sample_is_refused_not_truncated(tiny_model, tmp_path):
    proc = train(tiny_model, tmp_path / "cut", "cutoff_len=300", "max_steps=1")
    assert proc.returncode != 0
    assert "SampleTooLongError" in proc.stderr
    assert "cutoff_len is 300" in proc.stderr
    assert "Image features and image tokens do not match" not in proc.stderr.split("SampleTooLongError")[0]
    assert not os.path.exists(tmp_path / "cut" / "model.safetensors")
