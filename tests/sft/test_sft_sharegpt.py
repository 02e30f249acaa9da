"""Transcript -> ShareGPT: the row renders the chat the environment showed the model, and it round-trips
through LLaMA-Factory's own dataset loader (ShareGPT reader, image resolution, SFT encoder)."""

from __future__ import annotations

import hashlib
import json

import pytest
from opensearch_vl.sft.data_check import check_row, iter_rows, load_dataset_info
from opensearch_vl.sft.sharegpt import transcript_to_sharegpt, write_sharegpt_dataset
from opensearch_vl.tools_env.images import png_bytes
from opensearch_vl.tools_env.transcript import Action, ImageRecord, Step, TaskInfo, Transcript
from sft_fixtures import make_image

from opensearch_vl.errors import DataError

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "crop",
            "description": "Crop.",
            "parameters": {
                "type": "object",
                "properties": {"image": {"type": "string"}},
                "required": ["image"],
            },
        },
    }
]
CALL = '<think>\nZoom in.\n</think>\n\n<tool_call>\n{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call>'  # noqa: E501


def add(transcript, image_id, image, origin, step=None):
    png = png_bytes(image)
    record = ImageRecord(
        id=image_id,
        sha256=hashlib.sha256(png).hexdigest(),
        width=image.width,
        height=image.height,
        origin=origin,
        step_index=step,
    )
    transcript.add_image(record, png)


def episode(task_id="q1", answer=True) -> Transcript:
    t = Transcript(
        task=TaskInfo(id=task_id, question="What color?", image_ids=["img_1"]),
        system_prompt="Be careful.",
        tools=TOOLS,
    )
    add(t, "img_1", make_image(96, 96, (10, 200, 10)), "task")
    add(t, "img_2", make_image(48, 48, (10, 200, 10)), "crop", step=0)
    steps = [
        Step(
            index=0,
            model_text=CALL,
            action=Action(kind="tool_call", tool="crop", arguments={"image": "img_1"}, well_formed=True),
            observation="Image cropped successfully. New image ID: img_2",
            observation_image_ids=["img_2"],
        ),
    ]
    if answer:
        steps.append(
            Step(
                index=1,
                model_text="<think>\nGreen.\n</think>\n\n<response>green</response>",
                action=Action(kind="answer", answer="green"),
            )
        )
    t.steps = steps
    t.termination = "answer" if answer else "max_turns"
    return t


def test_row_layout(tmp_path):
    row = transcript_to_sharegpt(episode(), tmp_path / "images", media_root=tmp_path)
    assert row["conversations"] == [
        {"from": "human", "value": "<image>What color?"},
        {"from": "gpt", "value": CALL},
        {"from": "observation", "value": "<image>Image cropped successfully. New image ID: img_2"},
        {"from": "gpt", "value": "<think>\nGreen.\n</think>\n\n<response>green</response>"},
    ]
    assert row["system"] == "Be careful." and json.loads(row["tools"]) == TOOLS
    assert len(row["images"]) == 2 and all((tmp_path / p).exists() for p in row["images"])
    assert row["images"][0] != row["images"][1]


def test_tools_already_in_the_system_prompt_are_not_listed_twice(tmp_path):
    from opensearch_vl.tools_env.environment import ToolEnvironment

    t = episode()
    env = ToolEnvironment()
    t.system_prompt, t.tools = env.system_prompt(), env.openai_tools()  # what the runner records
    row = transcript_to_sharegpt(t, tmp_path / "images", media_root=tmp_path)
    assert row["tools"] == "" and row["system"] == t.system_prompt
    assert all(json.dumps(tool, ensure_ascii=False) in row["system"] for tool in env.openai_tools())


def test_unanswered_episode_is_refused(tmp_path):
    with pytest.raises(DataError, match="ends with a tool response"):
        transcript_to_sharegpt(episode(answer=False), tmp_path)


def test_round_trip_through_llamafactory_loader(tmp_path, lf_tokenizer_and_processor, tiny_model):
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.extras.constants import IGNORE_INDEX
    from llamafactory.hparams import DataArguments, ModelArguments
    from transformers import Seq2SeqTrainingArguments

    info = write_sharegpt_dataset([episode("a"), episode("b")], tmp_path / "data", "from_transcripts")
    (spec,) = load_dataset_info(info)
    assert all(check_row(r, spec, info.parent, i).issues == [] for i, r in enumerate(iter_rows(spec)))
    assert len(list((tmp_path / "data" / "images").iterdir())) == 2  # shared images written once

    tokenizer, processor = lf_tokenizer_and_processor
    data_args = DataArguments(
        template="qwen3_vl_agentic_nothink",
        dataset="from_transcripts",
        dataset_dir=str(info.parent),
        cutoff_len=4096,
    )
    model_args = ModelArguments(model_name_or_path=str(tiny_model), image_max_pixels=65536)
    training_args = Seq2SeqTrainingArguments(output_dir=str(tmp_path / "out"), report_to="none")
    template = get_template_and_fix_tokenizer(tokenizer, data_args)
    dataset = get_dataset(template, model_args, data_args, training_args, "sft", tokenizer, processor)[
        "train_dataset"
    ]
    assert len(dataset) == 2
    example = dataset[0]
    text = tokenizer.decode(example["input_ids"], skip_special_tokens=False)
    assert text.startswith("<|im_start|>system\nBe careful.\n\n# Tools\n\n")
    assert (
        "<|im_start|>user\n<tool_response>\n<|vision_start|>"
        + "<|image_pad|>" * 4
        + "<|vision_end|>Image cropped"
        in text
    )
    trained = tokenizer.decode([t for t in example["labels"] if t != IGNORE_INDEX], skip_special_tokens=False)
    assert trained == CALL + "<|im_end|>\n<think>\nGreen.\n</think>\n\n<response>green</response><|im_end|>\n"
