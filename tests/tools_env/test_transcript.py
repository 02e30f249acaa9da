"""Transcripts: save/load round trip with images, rebuilt messages, format errors, replay."""

from __future__ import annotations

import json

import pytest
from core_test_tools import CORE_TOOLS
from opensearch_vl.tools_env import (
    ImagePart,
    Score,
    ScriptedPolicy,
    Task,
    ToolEnvConfig,
    ToolEnvironment,
    Transcript,
    replay_episode,
    run_episode,
)
from PIL import Image

from opensearch_vl.errors import TranscriptFormatError


def turn(name: str, **arguments) -> str:
    payload = json.dumps({"name": name, "arguments": arguments})
    return f"<think>use {name}</think><tool_call>{payload}</tool_call>"


SCRIPT = [
    turn("core_paint", image="img_1", level=10, count=2),
    "<think>oops</think>no action here",
    turn("core_paint", image="img_3", level=10) + "<tool_response>made up",  # same pixels as img_2/img_3
    turn("core_fail", category="not_found"),
    "<think>sure</think><response>dark</response>",
]


@pytest.fixture
def env():
    return ToolEnvironment(ToolEnvConfig(tools=CORE_TOOLS))


@pytest.fixture
async def recorded(env):
    task = Task(
        id="r1",
        question="How dark is it?",
        images=[Image.new("RGB", (16, 12), (200, 10, 10))],
        answers=["dark", "very dark"],
        benchmark="unit",
        metadata={"source": "test"},
    )
    t = await run_episode(ScriptedPolicy(SCRIPT), task, env, policy_meta={"model": "script"})
    t.scores["accuracy"] = Score(value=None, explanation="judge unavailable")
    return t


async def test_recorded_episode_shape(recorded):
    assert recorded.termination == "answer"
    assert [s.error for s in recorded.steps] == [False, True, False, True, False]
    assert [r.id for r in recorded.images] == ["img_1", "img_2", "img_3", "img_4"]


async def test_save_load_round_trip_is_identical_and_keeps_images(recorded, tmp_path):
    path = recorded.save(tmp_path / "run" / "r1.json")
    files = sorted(p.name for p in (tmp_path / "run" / "images").iterdir())
    assert len(files) == 2  # img_2, img_3 and img_4 have the same pixels: stored once by hash
    loaded = Transcript.load(path)
    assert loaded.model_dump() == recorded.model_dump()
    assert loaded.model_dump_json() == recorded.model_dump_json()
    for record in recorded.images:
        assert loaded.image_bytes(record.id) == recorded.image_bytes(record.id)
    assert loaded.scores["accuracy"].value is None
    # saving the loaded transcript elsewhere carries its images along
    again = Transcript.load(loaded.save(tmp_path / "copy" / "r1.json"))
    assert again.image_bytes("img_4") == recorded.image_bytes("img_4")


async def test_messages_rebuilt_from_a_saved_transcript(recorded, tmp_path):
    loaded = Transcript.load(recorded.save(tmp_path / "r1.json"))
    messages = loaded.to_messages()
    assert [m.role for m in messages] == ["system", "user"] + ["assistant", "user"] * 4 + ["assistant"]
    assert messages[0].text == recorded.system_prompt
    first_obs = messages[3]
    assert [p.image_id for p in first_obs.content if isinstance(p, ImagePart)] == ["img_2", "img_3"]
    assert first_obs.images[0].getpixel((0, 0)) == (10, 10, 10)
    assert messages[1].images[0].size == (16, 12)
    assert messages[6].text == SCRIPT[2].split("<tool_response>")[0]  # the recorded text is the cut text
    text_only = loaded.to_messages(with_images=False)
    assert not any(m.images for m in text_only)


async def test_version_and_missing_images_are_format_errors(recorded, tmp_path):
    path = recorded.save(tmp_path / "r1.json")
    raw = json.loads(path.read_text())
    raw["version"] = 99
    (tmp_path / "future.json").write_text(json.dumps(raw))
    with pytest.raises(TranscriptFormatError, match="version 99"):
        Transcript.load(tmp_path / "future.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(TranscriptFormatError, match="cannot read"):
        Transcript.load(tmp_path / "broken.json")
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "r1.json").write_text(path.read_text())
    with pytest.raises(TranscriptFormatError, match="images/ folder"):
        Transcript.load(moved / "r1.json").image_bytes("img_1")


async def test_replay_of_a_saved_episode_reproduces_it(recorded, env, tmp_path):
    loaded = Transcript.load(recorded.save(tmp_path / "r1.json"))
    replayed = await replay_episode(loaded, env)
    assert replayed.behaviour() == recorded.behaviour()
    assert replayed.steps[2].action.repairs == ["tool_response_cut"]
    # a different tool result is caught
    changed = ToolEnvironment(ToolEnvConfig(tools=CORE_TOOLS, max_output_chars=3))
    assert (await replay_episode(loaded, changed)).behaviour() != recorded.behaviour()


def test_saved_files_are_readable_by_others_like_plain_writes(tmp_path):
    """Atomic writes must not leave mkstemp's 0600 mode: transcripts and reports live on shared storage."""
    import os
    import stat

    from opensearch_vl.atomic_write import atomic_write_bytes

    umask = os.umask(0o022)
    try:
        target = tmp_path / "report.md"
        atomic_write_bytes(target, b"ok")
        assert stat.S_IMODE(target.stat().st_mode) == 0o644 and target.read_bytes() == b"ok"
        assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left behind
    finally:
        os.umask(umask)
