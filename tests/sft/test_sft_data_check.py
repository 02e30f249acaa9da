"""`opensearch-vl sft check`: every problem found with dataset, index and reason; exact lengths; clean copy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opensearch_vl.sft.data_check import DatasetSpec, check_row, iter_rows, load_dataset_info, to_messages
from sft_fixtures import REPO, make_image

from opensearch_vl.cli.main import main as cli_main

TOOLS = json.dumps(
    [
        {
            "name": "crop",
            "parameters": {
                "type": "object",
                "properties": {"image": {"type": "string"}, "x": {"type": "integer", "minimum": 0}},
                "required": ["image"],
            },
        }
    ]
)


def call(args, name="crop"):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def row(turns, images=(), tools=TOOLS, system="s"):
    return {
        "conversations": [{"from": f, "value": v} for f, v in turns],
        "images": list(images),
        "tools": tools,
        "system": system,
    }


GOOD = [("human", "<image>q"), ("gpt", call({"image": "img_1"})), ("observation", "<image>ok"), ("gpt", "a")]


@pytest.fixture()
def broken_dataset(tmp_path) -> Path:
    images = tmp_path / "img"
    images.mkdir()
    make_image(64, 64).save(images / "a.png")
    (images / "broken.png").write_bytes(b"\x89PNG not really")
    ok = ["img/a.png", "img/a.png"]
    rows = [
        row(GOOD, ok),  # 0 fine
        row([("gpt", "a"), ("human", "q")]),  # 1 role order
        row(GOOD, ["img/a.png"]),  # 2 image count
        row(GOOD, ["img/a.png", "img/missing.png"]),  # 3 image missing
        row(GOOD, ["img/a.png", "img/broken.png"]),  # 4 undecodable
        row(GOOD, ok, tools="[{not json"),  # 5 tools json
        row(
            [
                ("human", "<image>q"),
                ("gpt", "<tool_call>\n{bad json}\n</tool_call>"),
                ("observation", "<image>ok"),
                ("gpt", "a"),
            ],
            ok,
        ),  # 6
        row(
            [
                ("human", "<image>q"),
                ("gpt", call({}, name="zoom")),
                ("observation", "<image>ok"),
                ("gpt", "a"),
            ],
            ok,
        ),  # 7 unknown
        row(
            [
                ("human", "<image>q"),
                ("gpt", call({"image": 3, "x": -1})),
                ("observation", "<image>ok"),
                ("gpt", "a"),
            ],
            ok,
        ),  # 8 schema
        row(
            [
                ("human", "<image>q"),
                ("gpt", call({"image": "img_1"}) + "\n" + call({"image": "img_1"})),
                ("observation", "<image>ok"),
                ("gpt", "a"),
            ],
            ok,
        ),  # 9
        row(
            [("human", "<image>q"), ("gpt", "no call"), ("observation", "<image>ok"), ("gpt", "a")], ok
        ),  # 10 obs w/o call
        row([("human", "<image>" + "long " * 400), ("gpt", "a")], ["img/a.png"]),  # 11 too long
    ]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    info = {
        "broken": {
            "file_name": "rows.json",
            "formatting": "sharegpt",
            "columns": {
                "messages": "conversations",
                "images": "images",
                "system": "system",
                "tools": "tools",
            },
        }
    }
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    return tmp_path / "dataset_info.json"


EXPECTED_KINDS = {
    1: {"role_order"},
    2: {"image_count"},
    3: {"image_missing"},
    4: {"image_undecodable"},
    5: {"tools_json"},
    6: {"tool_call_parse"},
    7: {"unknown_tool"},
    8: {"tool_call_schema"},
    9: {"tool_response_count"},
    10: {"role_order"},
}


def test_every_kind_of_problem_is_reported_with_its_index(broken_dataset):
    (spec,) = load_dataset_info(broken_dataset)
    found = {}
    for index, data in enumerate(iter_rows(spec)):
        result = check_row(data, spec, broken_dataset.parent, index)
        found[index] = {issue.kind for issue in result.issues}
        assert all(issue.dataset == "broken" and issue.index == index for issue in result.issues)
    assert found[0] == set() and found[11] == set()
    for index, kinds in EXPECTED_KINDS.items():
        assert found[index] == kinds, (index, found[index])


def test_schema_violations_name_the_argument(broken_dataset):
    (spec,) = load_dataset_info(broken_dataset)
    data = list(iter_rows(spec))[8]
    reasons = [i.reason for i in check_row(data, spec, broken_dataset.parent, 8).issues]
    assert any("image: 3 is not of type 'string'" in r for r in reasons)
    assert any("x: -1 is less than the minimum of 0" in r for r in reasons)


def test_cli_reports_refuses_too_long_and_writes_a_clean_copy(broken_dataset, tiny_model, tmp_path, capsys):
    out = tmp_path / "clean"
    argv = [
        "sft",
        "check",
        str(broken_dataset),
        "--model",
        str(tiny_model),
        "--cutoff-len",
        "512",
        "--write-clean",
        str(out),
    ]
    assert cli_main(argv) == 1
    printed = capsys.readouterr().out
    assert "broken[11] too_long:" in printed and "> cutoff_len 512" in printed
    assert "broken[3] image_missing: images[1] 'img/missing.png' not found" in printed
    assert "checked 12 samples in 1 datasets: 11 with problems" in printed
    kept = json.loads((out / "broken.json").read_text())
    assert len(kept) == 1 and all(Path(p).is_absolute() and Path(p).exists() for p in kept[0]["images"])
    rejected = [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
    assert sorted(r["index"] for r in rejected) == list(range(1, 12))
    assert json.loads((out / "dataset_info.json").read_text())["broken"]["file_name"] == "broken.json"


def test_bundled_sample_is_clean_and_lengths_are_exact(tiny_model, lf_tokenizer_and_processor):
    """The counted length equals the length LLaMA-Factory's SFT encoder produces with the real images."""
    from llamafactory.data import get_template_and_fix_tokenizer
    from llamafactory.data.processor import SupervisedDatasetProcessor
    from llamafactory.hparams import DataArguments
    from opensearch_vl.plugins.llamafactory.sample_length import TemplateLengthCounter
    from PIL import Image

    (spec,) = load_dataset_info(REPO / "recipes/data/dataset_info.json", ["opensearch_vl_sample"])
    counter = TemplateLengthCounter(str(tiny_model), "qwen3_vl_agentic_nothink", 65536)
    tokenizer, processor = lf_tokenizer_and_processor
    data_args = DataArguments(template="qwen3_vl_agentic_nothink", cutoff_len=100000)
    template = get_template_and_fix_tokenizer(tokenizer, data_args)
    encoder = SupervisedDatasetProcessor(
        template=template, tokenizer=tokenizer, processor=processor, data_args=data_args
    )
    rows = list(iter_rows(spec))
    assert len(rows) >= 8
    for index, data in enumerate(rows):
        result = check_row(data, spec, spec.path.parent.parent, index, counter, 2048)
        assert result.issues == []
        system, messages = to_messages(data, spec)
        images = [Image.open(REPO / "recipes/data" / p) for p in data["images"]]
        input_ids, _ = encoder._encode_data_example(
            messages[:-1], messages[-1:], system, data["tools"], images, [], []
        )
        assert result.length == len(input_ids), index


def test_unknown_dataset_name_is_a_clear_error(tmp_path):
    from opensearch_vl.errors import DataError

    (tmp_path / "dataset_info.json").write_text("{}")
    with pytest.raises(DataError, match="not in"):
        load_dataset_info(tmp_path / "dataset_info.json", ["nope"])
    assert DatasetSpec("x", tmp_path).name == "x"
