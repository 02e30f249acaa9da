"""`opensearch-vl rl prepare`: parquet/JSONL in, rLLM rows and a verl RL parquet out, every image checked."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from opensearch_vl.rl.agent import task_from_row
from opensearch_vl.rl.prepare import prepare_rl_data
from PIL import Image

from opensearch_vl.cli.main import main
from opensearch_vl.errors import DataError


def png(color, size=(40, 30)):
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def vdr_parquet(path, rows=10, bad=()):
    table = [
        {
            "question": f"Q{i}?",
            "answer": f"A{i}",
            "image": {"bytes": b"junk" if i in bad else png((i, 0, 0))},
            "category": "demo",
        }
        for i in range(rows)
    ]
    pq.write_table(pa.Table.from_pylist(table), path)


def test_parquet_to_verl_and_rllm_layouts(tmp_path):
    vdr_parquet(tmp_path / "rl.parquet")
    report = prepare_rl_data(tmp_path / "rl.parquet", tmp_path / "out", test_fraction=0.2)
    assert report.counts == {"train": 8, "test": 2} and report.images == 10
    verl = pq.read_table(report.verl_files["train"]).to_pylist()
    first = verl[0]
    assert first["agent_name"] == "vision_deepresearch" and first["prompt"][0]["content"].startswith(
        "<image>"
    )
    assert first["reward_model"]["ground_truth"] == first["extra_info"]["answers"][0]
    assert Image.open(io.BytesIO(first["images"][0]["bytes"])).size == (40, 30)
    rows = [json.loads(x) for x in report.rllm_files["test"].read_text().splitlines()]
    task = task_from_row(rows[0])
    assert task.answers and task.images[0].endswith(".png")


def test_bad_images_are_named_by_row_and_reason(tmp_path):
    vdr_parquet(tmp_path / "rl.parquet", bad=(3, 7))
    with pytest.raises(DataError, match=r"(?s)2 bad rows.*row 3 \(id 3\): image 0: not a decodable image"):
        prepare_rl_data(tmp_path / "rl.parquet", tmp_path / "out")
    report = prepare_rl_data(tmp_path / "rl.parquet", tmp_path / "out2", skip_bad=True, test_fraction=0)
    assert report.counts == {"train": 8} and len(report.skipped) == 2


def test_cli_prepare_jsonl_with_relative_paths(tmp_path, capsys):
    (tmp_path / "img.png").write_bytes(png((0, 0, 200)))
    (tmp_path / "rl.jsonl").write_text(
        json.dumps({"question": "Colour?", "answer": ["blue"], "images": ["img.png"]}) + "\n"
    )
    assert (
        main(
            [
                "rl",
                "prepare",
                str(tmp_path / "rl.jsonl"),
                "--out",
                str(tmp_path / "o"),
                "--test-fraction",
                "0",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["counts"] == {"train": 1}


def test_registers_with_rllm_dataset_registry(tmp_path, monkeypatch):
    pytest.importorskip("rllm", reason="rLLM is not installed (GitHub source only)")
    monkeypatch.setenv("RLLM_HOME", str(tmp_path / "rllm_home"))
    vdr_parquet(tmp_path / "rl.parquet", rows=4)
    report = prepare_rl_data(tmp_path / "rl.parquet", tmp_path / "out", test_fraction=0.25)
    from opensearch_vl.plugins.rllm.dataset import register_rllm_dataset

    paths = register_rllm_dataset("osvl-test", report.rllm_files)
    assert set(paths) == {"train", "test"}
    train = pq.read_table(paths["train"]).to_pylist()
    assert len(train) == 3 and train[0]["extra_info"]["question"].startswith(
        "Q"
    )  # rLLM's verl companion file
