"""Template encoding speed: our `qwen3_vl_agentic_nothink` vs LLaMA-Factory's built-in `qwen3_vl_nothink`.

1,000 synthetic trajectories (6 turns: question, call, image observation, call, image observation, answer;
3 images each) are encoded by both templates in the same run, alternating rounds, best of N:

- `template`: `Template.encode_multiturn` on messages whose images are already expanded to vision tokens
  (the part our template changes: system formatter + over-length guard);
- `encoder`: LLaMA-Factory's full SFT encoder (`SupervisedDatasetProcessor._encode_data_example`: image
  preprocessing, placeholder expansion, encoding, masking) on real 96x96/48x48 images.

Usage:
    python benchmarks/bench_template.py [--n 1000] [--rounds 3]
Prints seconds per mode and the ratio ours / built-in (goal <= 1.1).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from PIL import Image

TOOLS = json.dumps(
    [
        {
            "name": "crop",
            "description": "Crop a region.",
            "parameters": {
                "type": "object",
                "properties": {"image": {"type": "string"}, "x": {"type": "integer"}},
                "required": ["image"],
            },
        }
    ]
)


def trajectories(n: int) -> list[list[dict[str, str]]]:
    out = []
    for i in range(n):
        call = (
            "<think>\nLook closer at region %d.\n</think>\n\n<tool_call>\n"
            '{"name": "crop", "arguments": {"image": "img_1", "x": %d}}\n</tool_call>'
        )
        out.append(
            [
                {"role": "user", "content": f"<image>Question {i}: what is written on the sign?"},
                {"role": "assistant", "content": call % (i, i % 90)},
                {"role": "observation", "content": "<image>Image cropped successfully. New image ID: img_2"},
                {"role": "assistant", "content": call % (i + 1, (i + 7) % 90)},
                {"role": "observation", "content": "<image>Image cropped successfully. New image ID: img_3"},
                {
                    "role": "assistant",
                    "content": f"<think>\nThe sign reads {i}.\n</think>\n\n<response>{i}</response>",
                },
            ]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from llamafactory.data import get_template_and_fix_tokenizer
    from llamafactory.data.processor import SupervisedDatasetProcessor
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer
    from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl

    model_dir = build_tiny_qwen3vl(tempfile.mkdtemp(prefix="bench-tiny-"))
    loaded = load_tokenizer(ModelArguments(model_name_or_path=str(model_dir), image_max_pixels=65536))
    tokenizer, processor = loaded["tokenizer"], loaded["processor"]
    data = trajectories(args.n)
    images = [
        Image.new("RGB", (96, 96), (200, 30, 30)),
        Image.new("RGB", (48, 48), (30, 30, 200)),
        Image.new("RGB", (48, 48), (30, 200, 30)),
    ]
    pad = "<|vision_start|>" + "<|image_pad|>" * 9 + "<|vision_end|>"
    expanded = [[{**m, "content": m["content"].replace("<image>", pad)} for m in t] for t in data]

    encoders = {}
    for name in ("qwen3_vl_nothink", "qwen3_vl_agentic_nothink"):
        data_args = DataArguments(template=name, cutoff_len=32000)
        template = get_template_and_fix_tokenizer(tokenizer, data_args)
        encoders[name] = (
            template,
            SupervisedDatasetProcessor(
                template=template, tokenizer=tokenizer, processor=processor, data_args=data_args
            ),
        )

    def run_template(name):
        template = encoders[name][0]
        for messages in expanded:
            template.encode_multiturn(tokenizer, messages, "You are an agent.", TOOLS)

    def run_encoder(name):
        encoder = encoders[name][1]
        for messages in data:
            encoder._encode_data_example(
                messages[:-1], messages[-1:], "You are an agent.", TOOLS, images, [], []
            )

    print(f"{args.n} trajectories x 6 turns x 3 images, best of {args.rounds} rounds")
    for mode, fn in (("template", run_template), ("encoder", run_encoder)):
        best = {name: float("inf") for name in encoders}
        for r in range(args.rounds):
            for name in list(encoders)[:: 1 if r % 2 == 0 else -1]:  # alternate who runs first
                start = time.perf_counter()
                fn(name)
                best[name] = min(best[name], time.perf_counter() - start)
        ratio = best["qwen3_vl_agentic_nothink"] / best["qwen3_vl_nothink"]
        print(
            f"{mode:9s} built-in qwen3_vl_nothink {best['qwen3_vl_nothink']:.3f}s | ours "
            "qwen3_vl_agentic_nothink "
            f"{best['qwen3_vl_agentic_nothink']:.3f}s | ratio {ratio:.3f} (goal <= 1.1)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
