"""`opensearch-vl tools list` and `opensearch-vl tools call`, in-process through the real CLI entry point."""

from __future__ import annotations

import json

import pytest
import yaml
from core_test_tools import CORE_TOOLS
from PIL import Image

from opensearch_vl.cli.main import main


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump({"tools": CORE_TOOLS, "tool_timeout_s": 1.0}))
    return str(path)


@pytest.fixture
def photo(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    path = folder / "photo.jpg"
    Image.new("RGB", (30, 20), "blue").save(path)
    return str(path)


def test_list_prints_openai_schemas(config, capsys):
    assert main(["tools", "list", "--config", config]) == 0
    schemas = json.loads(capsys.readouterr().out)
    assert [s["function"]["name"] for s in schemas] == CORE_TOOLS
    assert schemas[0]["type"] == "function" and "parameters" in schemas[0]["function"]
    assert main(["tools", "list", "--config", config, "--names"]) == 0
    assert capsys.readouterr().out.split() == CORE_TOOLS


def test_list_reports_unavailable_tools(tmp_path, capsys):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({"tools": ["core_echo", "not_a_tool"]}))
    assert main(["tools", "list", "--config", str(path), "--names"]) == 1
    captured = capsys.readouterr()
    assert captured.out.split() == ["core_echo"]
    assert "not_a_tool is unavailable: unknown tool 'not_a_tool'" in captured.err


def test_call_writes_produced_images_and_prints_the_observation(config, photo, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "tools",
            "call",
            "core_paint",
            "--args",
            '{"image": "img_1", "count": 2, "level": 7}',
            "--image",
            photo,
            "--out",
            str(out),
            "--config",
            config,
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (result["error"], result["category"], result["image_ids"]) == (False, None, ["img_2", "img_3"])
    assert result["text"] == "painted 2\nNew image: img_2 (30x20)\nNew image: img_3 (30x20)"
    assert result["arguments"] == {"image": "img_1", "count": 2, "level": 7}
    written = Image.open(out / "img_3.png")
    assert written.size == (30, 20) and written.getpixel((0, 0)) == (7, 7, 7)
    assert result["images"][1]["path"] == str(out / "img_3.png")


def test_call_error_observation_exits_1(config, photo, capsys):
    code = main(
        ["tools", "call", "core_paint", "--args", '{"image": "img_5"}', "--image", photo, "--config", config]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 1
    assert result["error"] is True and result["category"] == "not_found"
    assert result["text"].startswith("[tool error: not_found]")


def test_call_usage_errors(config, capsys):
    assert main(["tools", "call", "core_echo", "--args", "{oops", "--config", config]) == 1
    assert "--args is not valid JSON" in capsys.readouterr().err
    assert main(["tools", "call", "no_such_tool", "--config", config]) == 1
    assert "unknown tool 'no_such_tool'" in capsys.readouterr().err
    assert main(["tools"]) == 2


def test_console_entry_point_calls_a_builtin_tool(photo, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "crops"
    command = [
        sys.executable,
        "-m",
        "opensearch_vl.cli.main",
        "tools",
        "call",
        "crop",
        "--args",
        '{"image": "img_1", "x": 5, "y": 5, "width": 10, "height": 8}',
        "--image",
        photo,
        "--out",
        str(out),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    observation = json.loads(result.stdout)
    assert observation["image_ids"] == ["img_2"] and observation["error"] is False
    assert Image.open(out / "img_2.png").size == (10, 8)
