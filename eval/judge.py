"""The judges: did the agent answer correctly (VDR-Bench style), and how good was its search process.

Public surface (the RL reward imports these):

- ``AnswerJudge(config).judge(question, answers, response) -> Score`` (async): ``value`` 1.0 / 0.0, or ``None``
  when the judge model replied but no verdict could be parsed after ``parse_attempts`` tries (*unscored*,
  reported separately, never 0). When the endpoint is down after its retries, the rule-based fallback gives
  the value and ``Score.fallback`` is true (``fallback="unscored"`` gives ``None`` instead). Without an
  endpoint the judge *is* the rule matcher.
- ``AnswerJudge.judge_transcript(transcript) -> Score``: the same on an episode; an episode that ended without
  a final answer scores 0.0 without calling the model.
- ``ProcessJudge(config).score(transcript) -> Score`` (async): a 0–1 rubric score of the tool steps before the
  fatal step (``r_query``). No tool steps → 0.0. No judge configured, endpoint down or unparseable → ``None``;
  the RL reward treats ``None`` as 0 (as the reference does) while reports count it as unscored.
- ``rule_match(response, answers) -> bool``: the synchronous normalized exact / alias / contains match.

Every Score records ``judge_model``, ``prompt_sha256`` (of the prompt template file), ``raw_output`` and, in
``metadata``, the attempts made. Prompts are package data: ``eval/prompts/answer_judge.txt`` and
``eval/prompts/process_judge.txt``.

Example:
    >>> judge = AnswerJudge(JudgeConfig())  # no endpoint: rule-based
    >>> import asyncio
    >>> asyncio.run(judge.judge("Which tower?", ["Eiffel Tower"], "<response>the Eiffel Tower</response>")).value
    1.0
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Literal

from opensearch_vl.eval.answer_match import rule_match
from opensearch_vl.eval.chat_client import ChatClient, EndpointConfig, EndpointError
from opensearch_vl.tools_env.transcript import Score, Transcript
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "JudgeConfig",
    "AnswerJudge",
    "ProcessJudge",
    "rule_match",
    "load_prompt",
    "parse_verdict",
    "parse_process_score",
    "summarize_tool_steps",
    "RULE_JUDGE_NAME",
]

logger = logging.getLogger(__name__)

RULE_JUDGE_NAME = "rule-match"
_MAX_TOOL_STEPS = 20
_VERDICT = re.compile(
    r"correct\W{0,3}\s*[:=]\s*\W{0,3}\s*(yes|no|true|false|incorrect|correct)\b(?!\s*(?:/|or\b))", re.I
)
_SCORE = re.compile(r"score[\"'\]\s]{0,3}[:=][\s\"'\[(]*(-?\d+(?:\.\d+)?|-?\.\d+)", re.I)
_MARKDOWN = re.compile(r"[*_`#]")


class JudgeConfig(BaseModel):
    """How to judge. Without ``endpoint`` the answer judge is rule-based and the process judge is off."""

    model_config = ConfigDict(extra="forbid")

    endpoint: EndpointConfig | None = None
    """OpenAI-compatible judge model (GPT-4o, or a local vLLM/sglang server); ``None`` = rule-based only."""
    temperature: float = 0.0
    """Sampling temperature of the judge; 0 makes verdicts repeatable."""
    max_tokens: int = Field(800, ge=16)
    """Completion budget of one verdict."""
    parse_attempts: int = Field(3, ge=1)
    """Times to ask again when the reply has no parseable verdict (HTTP retries are the endpoint's)."""
    fallback: Literal["rule", "unscored"] = "rule"
    """What the answer judge does when the endpoint is down: use ``rule_match`` (marked) or leave unscored."""
    max_response_chars: int = Field(8000, ge=100)
    """The report shown to the judge is cut to this many characters (head and tail kept)."""


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """The text of ``eval/prompts/<name>.txt``. Example: ``load_prompt("answer_judge")``."""
    return (
        resources.files("opensearch_vl.eval").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fill(template: str, **fields: str) -> str:
    # str.format would choke on braces inside questions and reports; substitute the named fields only.
    for key, value in fields.items():
        template = template.replace("{" + key + "}", value)
    return template


def _middle_cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 10, 1)
    return f"{text[:half]} …[{len(text) - 2 * half} chars cut]… {text[-half:]}"


def parse_verdict(raw: str) -> bool | None:
    """``True``/``False`` from a judge reply (``correct: yes``; markdown, JSON and quotes tolerated), ``None``
    when there is no verdict. The last verdict line wins.

    Example:
        >>> parse_verdict("reasoning: matches.\\n**Correct:** Yes")
        True
    """
    text = _MARKDOWN.sub("", raw)
    found = _VERDICT.findall(text)
    if found:
        return found[-1].lower() in ("yes", "true", "correct")
    bare = text.strip().strip(".!").lower()
    if bare in ("yes", "no"):
        return bare == "yes"
    return None


def parse_process_score(raw: str) -> float | None:
    """The ``score: <float>`` of a process-judge reply, clamped to [0, 1]; ``None`` if absent.

    Example:
        >>> parse_process_score("reasoning: fine\\nscore: 0.7")
        0.7
    """
    found = _SCORE.findall(_MARKDOWN.sub("", raw))
    if not found:
        return None
    return min(max(float(found[-1]), 0.0), 1.0)


def _format_answers(answers: Sequence[str]) -> str:
    answers = [a for a in answers if str(a).strip()]
    if not answers:
        return "(none given)"
    if len(answers) == 1:
        return str(answers[0])
    return f"{answers[0]} (also accepted: {'; '.join(map(str, answers[1:]))})"


class _EndpointJudge:
    prompt_name: str

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.template = load_prompt(self.prompt_name)
        self.prompt_sha256 = _sha(self.template)
        self._client = ChatClient(config.endpoint) if config.endpoint is not None else None

    async def aclose(self) -> None:
        """Close the judge endpoint's connections on the running loop."""
        if self._client is not None:
            await self._client.aclose()

    @property
    def model_name(self) -> str:
        """The judge's identity as recorded on scores."""
        return self.config.endpoint.model if self.config.endpoint is not None else RULE_JUDGE_NAME

    async def _ask(self, prompt: str, parse):
        """Ask until ``parse`` gives a value; returns (value, raw, attempts). Raises EndpointError on outage."""
        assert self._client is not None
        raw = ""
        for attempt in range(1, self.config.parse_attempts + 1):
            completion = await self._client.complete(
                [{"role": "user", "content": prompt}],
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
            )
            raw = completion.text
            value = parse(raw)
            if value is not None:
                return value, raw, attempt
            logger.info("%s: unparseable reply (attempt %d): %r", self.model_name, attempt, raw[:200])
        return None, raw, self.config.parse_attempts


class AnswerJudge(_EndpointJudge):
    """Does the report contain the correct answer? See the module docstring for the contract.

    Example:
        >>> cfg = JudgeConfig(endpoint=EndpointConfig(base_url="http://127.0.0.1:8000/v1", model="gpt-4o"))
        >>> judge = AnswerJudge(cfg)
        >>> # score = await judge.judge("Who?", ["Ada Lovelace"], "It was Ada Lovelace.")
    """

    prompt_name = "answer_judge"

    async def judge(self, question: str, answers: Sequence[str], response: str) -> Score:
        """Judge one response against the reference ``answers`` (reference first, then aliases)."""
        answers = [str(a) for a in answers]
        if self._client is None:
            return Score(
                value=float(rule_match(response, answers)),
                judge_model=RULE_JUDGE_NAME,
                explanation="normalized exact / alias / contains match",
            )
        report = _middle_cut(response, self.config.max_response_chars)
        prompt = _fill(
            self.template, question=question, correct_answer=_format_answers(answers), response=report
        )
        base = dict(judge_model=self.model_name, prompt_sha256=self.prompt_sha256)
        try:
            verdict, raw, attempts = await self._ask(prompt, parse_verdict)
        except EndpointError as exc:
            if self.config.fallback == "rule":
                return Score(
                    value=float(rule_match(response, answers)),
                    fallback=True,
                    explanation=f"judge unavailable, rule-based fallback: {exc}",
                    **base,
                    metadata={"error": str(exc), "fallback_judge": RULE_JUDGE_NAME},
                )
            return Score(
                value=None, explanation=f"judge unavailable: {exc}", **base, metadata={"error": str(exc)}
            )
        if verdict is None:
            return Score(
                value=None,
                raw_output=raw,
                explanation="no parseable verdict in the judge's reply",
                **base,
                metadata={"attempts": attempts, "unparseable": True},
            )
        reasoning = re.search(r"reasoning\W{0,3}\s*[:=]\s*(.+)", _MARKDOWN.sub("", raw), re.I)
        return Score(
            value=1.0 if verdict else 0.0,
            raw_output=raw,
            explanation=reasoning.group(1).strip() if reasoning else None,
            **base,
            metadata={"attempts": attempts},
        )

    async def judge_transcript(self, transcript: Transcript) -> Score:
        """Judge an episode's final answer; an episode without one scores 0.0 (not a judge call)."""
        if transcript.final_answer is None or not transcript.final_answer.strip():
            return Score(
                value=0.0,
                judge_model=self.model_name,
                prompt_sha256=self.prompt_sha256,
                explanation=f"no final answer (termination: {transcript.termination})",
                metadata={"no_answer": True},
            )
        return await self.judge(transcript.task.question, transcript.task.answers, transcript.final_answer)


def summarize_tool_steps(transcript: Transcript) -> tuple[str, int]:
    """The trajectory text the process judge reads, and how many tool steps it holds.

    Tool-call steps before the fatal step only, at most 20: ``Step k: tool(args)`` (args ≤ 200 chars), an
    ``[ERROR: category]`` mark on error steps, then ``Result: …`` (≤ 400 chars, middle cut).

    Example:
        >>> summarize_tool_steps(Transcript(task=TaskInfo(id="q", question="?")))
        ('(no tool calls)', 0)
    """
    import json

    lines: list[str] = []
    count = 0
    for step in transcript.steps:
        if transcript.fatal_step_index is not None and step.index >= transcript.fatal_step_index:
            break
        if step.action.kind != "tool_call":
            continue
        count += 1
        if count > _MAX_TOOL_STEPS:
            lines.append("(further tool steps omitted)")
            count -= 1
            break
        args = _middle_cut(json.dumps(step.action.arguments or {}, ensure_ascii=False), 200)
        mark = f" [ERROR: {step.error_category}]" if step.error else ""
        lines.append(f"Step {count}: {step.action.tool}({args}){mark}")
        lines.append(f"Result: {_middle_cut(step.observation or '', 400)}")
    return ("\n".join(lines) if lines else "(no tool calls)"), count


class ProcessJudge(_EndpointJudge):
    """Rubric score (0–1) of the search process; used as ``r_query``. See the module docstring.

    Example:
        >>> # score = await ProcessJudge(cfg).score(transcript); r_query = score.value or 0.0
    """

    prompt_name = "process_judge"

    async def score(self, transcript: Transcript) -> Score:
        """Score the tool steps of ``transcript`` before its fatal step."""
        trajectory, n_steps = summarize_tool_steps(transcript)
        base = dict(judge_model=self.model_name, prompt_sha256=self.prompt_sha256)
        if n_steps == 0:
            return Score(
                value=0.0,
                explanation="no tool calls before the fatal step",
                **base,
                metadata={"tool_steps": 0},
            )
        if self._client is None:
            return Score(value=None, explanation="no process judge configured", **base)
        prompt = _fill(
            self.template,
            question=transcript.task.question,
            correct_answer=_format_answers(transcript.task.answers),
            response=_middle_cut(transcript.final_answer or "(no final answer)", 300),
            trajectory=trajectory,
        )
        try:
            value, raw, attempts = await self._ask(prompt, parse_process_score)
        except EndpointError as exc:
            return Score(
                value=None, explanation=f"judge unavailable: {exc}", **base, metadata={"error": str(exc)}
            )
        meta = {"attempts": attempts, "tool_steps": n_steps}
        if value is None:
            return Score(
                value=None,
                raw_output=raw,
                explanation="no parseable score in the judge's reply",
                **base,
                metadata={**meta, "unparseable": True},
            )
        reasoning = re.search(r"reasoning\W{0,3}\s*[:=]\s*(.+)", _MARKDOWN.sub("", raw), re.I)
        return Score(
            value=value,
            raw_output=raw,
            explanation=reasoning.group(1).strip() if reasoning else None,
            **base,
            metadata=meta,
        )
