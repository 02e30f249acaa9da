"""The answer and process judges against a real OpenAI-compatible server on 127.0.0.1."""

import hashlib

import pytest
from chat_server import ChatServer, Reply
from opensearch_vl.eval.answer_match import extract_final_answer, normalize_answer, rule_match
from opensearch_vl.eval.chat_client import EndpointConfig
from opensearch_vl.eval.judge import (
    AnswerJudge,
    JudgeConfig,
    ProcessJudge,
    load_prompt,
    parse_process_score,
    parse_verdict,
)
from opensearch_vl.tools_env.transcript import Action, Step, TaskInfo, Transcript


def _config(server: ChatServer, **kw) -> JudgeConfig:
    endpoint = EndpointConfig(
        base_url=server.base_url,
        model="judge-7b",
        backoff_s=0.01,
        max_retries=2,
        timeout_s=kw.pop("timeout_s", 5.0),
    )
    return JudgeConfig(endpoint=endpoint, **kw)


async def test_verdict_yes_records_identity_prompt_hash_and_raw(chat_server):
    chat_server.replies = [Reply("reasoning: The report names the tower.\ncorrect: yes")]
    score = await AnswerJudge(_config(chat_server)).judge(
        "Which tower?", ["Eiffel Tower", "Tour Eiffel"], "<response>The Tour Eiffel</response>"
    )
    assert score.value == 1.0
    assert score.judge_model == "judge-7b"
    assert score.prompt_sha256 == hashlib.sha256(load_prompt("answer_judge").encode()).hexdigest()
    assert score.raw_output.endswith("correct: yes")
    assert score.explanation == "The report names the tower."
    assert not score.fallback
    request = chat_server.requests[0]
    assert request["temperature"] == 0.0 and request["model"] == "judge-7b"
    prompt = request["messages"][0]["content"]
    assert "Which tower?" in prompt and "Eiffel Tower (also accepted: Tour Eiffel)" in prompt
    assert "{question}" not in prompt


async def test_verdict_no(chat_server):
    chat_server.replies = [Reply("**Reasoning:** wrong city\n**Correct:** No")]
    score = await AnswerJudge(_config(chat_server)).judge("Q", ["Paris"], "London {braces} stay")
    assert score.value == 0.0
    assert "London {braces} stay" in chat_server.requests[0]["messages"][0]["content"]


async def test_malformed_output_is_retried_then_unscored_never_zero(chat_server):
    chat_server.replies = [Reply("I think maybe?"), Reply("{not json"), Reply("correct: <yes or no>")]
    score = await AnswerJudge(_config(chat_server, parse_attempts=3)).judge("Q", ["Paris"], "Paris")
    assert score.value is None
    assert score.metadata["unparseable"] is True and score.metadata["attempts"] == 3
    assert score.raw_output == "correct: <yes or no>"
    assert len(chat_server.requests) == 3


async def test_malformed_then_good_reply_is_used(chat_server):
    chat_server.replies = [Reply("hmm"), Reply('{"reasoning": "ok", "correct": "yes"}')]
    score = await AnswerJudge(_config(chat_server)).judge("Q", ["Paris"], "Paris")
    assert score.value == 1.0 and score.metadata["attempts"] == 2


async def test_server_errors_are_retried(chat_server):
    chat_server.replies = [Reply(status=503), Reply(status=429), Reply("correct: yes")]
    score = await AnswerJudge(_config(chat_server)).judge("Q", ["Paris"], "Paris")
    assert score.value == 1.0 and not score.fallback
    assert len(chat_server.requests) == 3


async def test_outage_falls_back_to_rule_match_marked(chat_server):
    chat_server.replies = [Reply(status=500)]
    score = await AnswerJudge(_config(chat_server)).judge("Q", ["Paris"], "<response>paris.</response>")
    assert score.value == 1.0 and score.fallback is True
    assert "rule-based fallback" in score.explanation
    assert len(chat_server.requests) == 3  # first attempt + 2 retries


async def test_outage_unscored_when_fallback_disabled():
    # Nothing listens on this port: a real connection refusal.
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    cfg = JudgeConfig(
        endpoint=EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1", backoff_s=0.01, max_retries=1),
        fallback="unscored",
    )
    score = await AnswerJudge(cfg).judge("Q", ["Paris"], "Paris")
    assert score.value is None and "connection failed" in score.explanation


async def test_judge_timeout_is_an_outage(chat_server):
    chat_server.replies = [Reply("correct: yes", delay_s=1.0)]
    score = await AnswerJudge(_config(chat_server, timeout_s=0.2)).judge("Q", ["Paris"], "Paris")
    assert score.fallback is True and "no answer within" in score.explanation


async def test_rule_judge_without_endpoint():
    judge = AnswerJudge(JudgeConfig())
    assert (await judge.judge("Q", ["1,024"], "<think>x</think><response>1024</response>")).value == 1.0
    assert (await judge.judge("Q", ["cat"], "a dog")).value == 0.0
    assert judge.model_name == "rule-match"


async def test_transcript_without_answer_scores_zero_without_calling(chat_server):
    t = Transcript(task=TaskInfo(id="q", question="Q", answers=["A"]), termination="fatal_cascade")
    score = await AnswerJudge(_config(chat_server)).judge_transcript(t)
    assert score.value == 0.0 and score.metadata["no_answer"]
    assert chat_server.requests == []


def _tool_step(i, tool, obs, error=False):
    return Step(
        index=i,
        model_text="...",
        action=Action(kind="tool_call", tool=tool, arguments={"q": f"query {i}"}),
        observation=obs,
        error=error,
        error_category="not_found" if error else None,
    )


async def test_process_judge_scores_pre_fatal_steps_only(chat_server):
    chat_server.replies = [Reply("reasoning: focused queries\nscore: 0.7")]
    steps = [
        _tool_step(0, "text_search", "found the tower"),
        _tool_step(1, "visit", "x" * 1000, error=True),
        _tool_step(2, "visit", "boom", error=True),
    ]
    t = Transcript(
        task=TaskInfo(id="q", question="Which tower?", answers=["Eiffel"]),
        steps=steps,
        fatal_step_index=1,
        termination="fatal_cascade",
    )
    score = await ProcessJudge(_config(chat_server)).score(t)
    assert score.value == 0.7 and score.metadata["tool_steps"] == 1
    prompt = chat_server.requests[0]["messages"][0]["content"]
    assert "Step 1: text_search" in prompt and "visit" not in prompt
    assert score.prompt_sha256 == hashlib.sha256(load_prompt("process_judge").encode()).hexdigest()


async def test_process_judge_no_tool_steps_is_zero_and_unparseable_is_none(chat_server):
    empty = Transcript(task=TaskInfo(id="q", question="Q"))
    assert (await ProcessJudge(_config(chat_server)).score(empty)).value == 0.0
    chat_server.replies = [Reply("great job")]
    t = Transcript(task=TaskInfo(id="q", question="Q"), steps=[_tool_step(0, "crop", "ok")])
    score = await ProcessJudge(_config(chat_server, parse_attempts=2)).score(t)
    assert score.value is None and score.metadata["unparseable"]


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("correct: yes", True),
        ("Correct: NO.", False),
        ("**correct**: yes", True),
        ('"correct": "no"', False),
        ("reasoning: is correct: no wait\ncorrect: yes", True),
        ("yes", True),
        ("maybe", None),
        ("", None),
        ("correct: [yes/no]", None),
    ],
)
def test_parse_verdict(raw, expected):
    assert parse_verdict(raw) is expected


@pytest.mark.parametrize(
    "raw,expected",
    [("score: 0.5", 0.5), ("Score: 1.7", 1.0), ("score: -2", 0.0), ("**score:** .3", 0.3), ("nothing", None)],
)
def test_parse_process_score(raw, expected):
    assert parse_process_score(raw) == expected


def test_rule_match_and_extraction():
    assert normalize_answer("The  Louvre!") == "louvre"
    assert rule_match("It is in the Louvre museum.", ["Louvre"])
    assert not rule_match("Louvreville", ["Louvre"])
    assert rule_match("x", ["", "X"])
    assert not rule_match("", ["a"])
    assert extract_final_answer("<think>no</think>so <answer>7</answer>") == "7"
    assert extract_final_answer("\\boxed{a{b}c}") == "a{b}c"
