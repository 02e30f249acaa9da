"""Loaders on project-made rows in each benchmark's published schema (never benchmark data)."""

import base64
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from opensearch_vl.eval.registry import available_benchmarks, get_benchmark, load_tasks
from opensearch_vl.tools_env.images import ImageStore
from PIL import Image

from opensearch_vl.errors import ConfigError, DataError


def _png(color=(200, 30, 30), size=(24, 16)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _parquet(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _decodes(task, roots):
    store = ImageStore(roots=roots)
    for image in task.images:
        store.add(image)
    return [store.get(i).size for i in store.ids]


def test_registry_lists_every_benchmark():
    names = set(available_benchmarks())
    assert {
        "simplevqa",
        "vdr_bench",
        "vdr_bench_testmini",
        "mmsearch",
        "livevqa",
        "browsecomp_vl",
        "fvqa",
        "infoseek",
        "hle",
        "mini",
    } <= names
    with pytest.raises(ConfigError, match="available: .*simplevqa"):
        get_benchmark("simplevqa2")
    assert "python_interpreter" in get_benchmark("browsecomp_vl").profile.tools


def test_simplevqa_parquet_base64_and_language_filter(tmp_path):
    b64 = base64.b64encode(_png()).decode()
    rows = [
        {
            "data_id": 7,
            "image": b64,
            "question": "What colour is the square?",
            "answer": "red",
            "language": "EN",
            "original_category": "colour",
            "vqa_category": "attr",
            "source": "made-up",
            "atomic_question": "q",
            "atomic_fact": "f",
            "image_description": "a red square",
        },
        {
            "data_id": 8,
            "image": b64,
            "question": "这是什么颜色?",
            "answer": "红色",
            "language": "CN",
            "original_category": "c",
            "vqa_category": "v",
            "source": "s",
            "atomic_question": "q",
            "atomic_fact": "f",
            "image_description": "d",
        },
    ]
    file = _parquet(tmp_path / "test.parquet", rows)
    tasks = load_tasks("simplevqa", file, language="EN")
    assert [t.id for t in tasks] == ["7"]
    assert tasks[0].answers == ["red"] and tasks[0].benchmark == "simplevqa"
    assert tasks[0].metadata["vqa_category"] == "attr"
    assert _decodes(tasks[0], []) == [(24, 16)]
    assert len(load_tasks("simplevqa", file)) == 2


def test_vdr_bench_hf_rows_and_rllm_parquet(tmp_path):
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(_png())
    hf = _parquet(
        tmp_path / "vdr.parquet",
        [
            {
                "id": "v1",
                "question": "Which building?",
                "answer": "Town Hall",
                "category": "place",
                "image": {"bytes": _png(), "path": None},
            }
        ],
    )
    tasks = load_tasks("vdr_bench", hf)
    assert tasks[0].answers == ["Town Hall"] and tasks[0].metadata == {"category": "place"}
    assert _decodes(tasks[0], []) == [(24, 16)]
    rllm = _parquet(
        tmp_path / "rllm.parquet",
        [
            {
                "idx": 3,
                "question": "image_id:1 Question: Who built it?",
                "answer": "Ada",
                "images": [str(tmp_path / "imgs" / "a.png")],
            }
        ],
    )
    mini = load_tasks("vdr_bench_testmini", rllm)
    assert mini[0].id == "3" and mini[0].question == "Who built it?"
    assert _decodes(mini[0], [tmp_path]) == [(24, 16)]


def test_mmsearch_keeps_image_questions_only(tmp_path):
    rows = [
        {
            "sample_id": "news-1",
            "query": "Who is on the stage?",
            "query_image": {"bytes": _png()},
            "gt_answer": "Jo Doe",
            "alternative_gt_answers": ["J. Doe"],
            "area": "news",
            "subfield": "arts",
            "timestamp": "2024-07",
        },
        {
            "sample_id": "news-2",
            "query": "Text-only question?",
            "query_image": None,
            "gt_answer": "x",
            "alternative_gt_answers": [],
            "area": "news",
            "subfield": "arts",
            "timestamp": "2024-07",
        },
    ]
    tasks = load_tasks("mmsearch", _parquet(tmp_path / "end2end.parquet", rows))
    assert [t.id for t in tasks] == ["news-1"]
    assert tasks[0].answers == ["Jo Doe", "J. Doe"] and tasks[0].metadata["area"] == "news"


def test_livevqa_relative_img_path_and_options(tmp_path):
    (tmp_path / "image").mkdir()
    (tmp_path / "image" / "9.png").write_bytes(_png(size=(10, 10)))
    rows = [
        {
            "id": 9,
            "question": "Which team won?",
            "Ground_Truth": "Blue",
            "Ground_Truth_List": ["Blue", "Blues"],
            "img_path": "image/9.png",
            "options": ["A. Blue", "B. Red"],
            "level": 1,
            "topic": "sport",
            "source": "news",
        }
    ]
    tasks = load_tasks("livevqa", _jsonl(tmp_path / "qa.jsonl", rows))
    assert tasks[0].answers == ["Blue", "Blues"] and "B. Red" in tasks[0].question
    assert _decodes(tasks[0], [tmp_path]) == [(10, 10)]


def test_browsecomp_vl_both_levels_from_folder(tmp_path):
    for level in (1, 2):
        (tmp_path / "images" / f"level{level}").mkdir(parents=True)
        (tmp_path / "images" / f"level{level}" / "0.png").write_bytes(_png())
        _jsonl(
            tmp_path / f"bc_vl_level{level}.jsonl",
            [
                {
                    "question": f"L{level} question?",
                    "image_path": f"images/level{level}/0.png",
                    "answers": [f"ans{level}", f"alias{level}"],
                    "domain": "art",
                }
            ],
        )
    tasks = load_tasks("browsecomp_vl", tmp_path)
    assert [t.id for t in tasks] == ["l1-0", "l2-0"]
    assert tasks[1].answers == ["ans2", "alias2"] and tasks[1].metadata == {"level": 2, "domain": "art"}
    assert [t.id for t in load_tasks("browsecomp_vl", tmp_path, level=2)] == ["l2-0"]
    assert _decodes(tasks[0], [tmp_path]) == [(24, 16)]


def _verl_row(data_id, question):
    return {
        "data_id": data_id,
        "category": "search_required",
        "data_source": "fvqa_test",
        "prompt": [
            {"role": "user", "content": f"<image>Answer with the tools you have. Question: {question}"}
        ],
        "images": [{"bytes": _png()}],
        "image_urls": None,
        "reward_model": {
            "ground_truth": "Kyoto",
            "candidate_answers": json.dumps(["Kyoto", "Kyōto"]),
            "style": "rule",
        },
    }


def test_fvqa_parquet(tmp_path):
    tasks = load_tasks(
        "fvqa", _parquet(tmp_path / "fvqa_test.parquet", [_verl_row("f1", "Which city is this?")])
    )
    t = tasks[0]
    assert (t.id, t.question, t.answers) == ("f1", "Which city is this?", ["Kyoto", "Kyōto"])
    assert t.metadata["category"] == "search_required"
    assert _decodes(t, []) == [(24, 16)]


def test_infoseek_both_layouts(tmp_path):
    sub = load_tasks(
        "infoseek", _parquet(tmp_path / "infoseek_sub.parquet", [_verl_row("i1", "Who made it?")])
    )
    assert sub[0].answers == ["Kyoto", "Kyōto"]
    (tmp_path / "oven").mkdir()
    (tmp_path / "oven" / "oven_0001.jpg").write_bytes(_png())
    rows = [
        {
            "data_id": "val_1",
            "image_id": "oven_0001",
            "question": "How tall is it?",
            "answer": ["12.5"],
            "answer_eval": [{"wikidata": 12.5, "range": [12.0, 13.0]}],
            "data_split": "val_unseen_entity",
        }
    ]
    orig = load_tasks("infoseek", _jsonl(tmp_path / "val.jsonl", rows), image_dir=str(tmp_path / "oven"))
    assert orig[0].answers == ["12.5"] and orig[0].metadata["numeric_ranges"] == [[12.0, 13.0]]
    assert _decodes(orig[0], [tmp_path]) == [(24, 16)]
    with pytest.raises(DataError, match="image_dir"):
        load_tasks("infoseek", tmp_path / "val.jsonl")


def test_hle_image_rows_only_by_default(tmp_path):
    uri = "data:image/png;base64," + base64.b64encode(_png()).decode()
    rows = [
        {
            "id": "h1",
            "question": "What is drawn?",
            "image": uri,
            "answer": "a square",
            "answer_type": "exactMatch",
            "rationale": "r",
            "category": "Other",
            "raw_subject": "x",
        },
        {
            "id": "h2",
            "question": "2+2?",
            "image": "",
            "answer": "4",
            "answer_type": "exactMatch",
            "rationale": "r",
            "category": "Math",
            "raw_subject": "y",
        },
    ]
    file = _jsonl(tmp_path / "hle.jsonl", rows)
    assert [t.id for t in load_tasks("hle", file)] == ["h1"]
    assert [t.id for t in load_tasks("hle", file, with_image_only=False)] == ["h1", "h2"]


def test_bad_inputs_name_the_file(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"question": "q", "answers": ["a"]}\nnot json\n')
    with pytest.raises(DataError, match=r"x.jsonl:2"):
        load_tasks("browsecomp_vl", bad)
    with pytest.raises(DataError, match="no such file"):
        load_tasks("fvqa", tmp_path / "missing.parquet")
    dup = _jsonl(tmp_path / "dup.jsonl", [{"id": 1, "question": "q", "answer": "a"}] * 2)
    with pytest.raises(ConfigError, match="duplicate case id '1'"):
        load_tasks("hle", dup, with_image_only=False)
