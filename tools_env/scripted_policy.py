"""A scripted chat policy: replays fixed turns. The test driver for the episode runner (and for demos).

It sits at our own boundary (the :class:`~opensearch_vl.tools_env.policy.ChatPolicy` protocol), so tests
drive the real runner, parser and tools with it, the way inspect_ai's ``mockllm`` drives its solvers.

The turn it returns is chosen by the number of assistant messages already in the conversation, so one
instance is stateless per episode and can serve any number of concurrent episodes. A turn can be:

- a ``str`` (the model text) or a :class:`~opensearch_vl.tools_env.policy.PolicyOutput`;
- an exception instance, which is raised (to test policy failures);
- a callable ``messages -> str | PolicyOutput`` (to answer based on what the model was shown).

Asking for a turn past the end of the script raises :class:`~opensearch_vl.tools_env.policy.PolicyError`.

Example:
    >>> import asyncio
    >>> policy = ScriptedPolicy(["<think>done</think><response>42</response>"], delay_s=0.001)
    >>> asyncio.run(policy(())).text
    '<think>done</think><response>42</response>'
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

from opensearch_vl.tools_env.policy import ChatMessage, PolicyError, PolicyOutput

if TYPE_CHECKING:
    from opensearch_vl.tools_env.transcript import Transcript

__all__ = ["ScriptedPolicy", "ScriptedTurn"]

ScriptedTurn = Union[
    str, PolicyOutput, BaseException, Callable[[Sequence[ChatMessage]], Union[str, PolicyOutput]]
]
"""One entry of a script: text, a full output, an exception to raise, or a function of the messages."""


class ScriptedPolicy:
    """Replays ``turns``; turn *i* answers the conversation that already holds *i* assistant messages.

    Args:
        turns: the script.
        delay_s: seconds to wait before answering (simulates model latency); one value, or one per turn.
        record: keep every message list received in :attr:`calls` (turn it off for benchmarks).

    Example:
        >>> policy = ScriptedPolicy(["<think>a</think><response>b</response>"])
        >>> len(policy.turns)
        1
    """

    def __init__(
        self, turns: Sequence[ScriptedTurn], *, delay_s: float | Sequence[float] = 0.0, record: bool = True
    ) -> None:
        self.turns = list(turns)
        if not isinstance(delay_s, (int, float)) and len(delay_s) != len(self.turns):
            raise ValueError(
                f"delay_s has {len(delay_s)} values for {len(self.turns)} turns; give one per turn"
            )
        self.delay_s = delay_s
        self.record = record
        self.calls: list[tuple[ChatMessage, ...]] = []
        """Every message list received, in call order (when ``record``)."""

    @classmethod
    def from_transcript(cls, transcript: Transcript, **kwargs: Any) -> ScriptedPolicy:
        """A policy that replays the model turns of a recorded transcript (for replay and regression tests).

        Example:
            >>> ScriptedPolicy.from_transcript(recorded).turns[0].text  # doctest: +SKIP
            '<think>…</think><tool_call>…</tool_call>'
        """
        turns: list[ScriptedTurn] = []
        for step in transcript.steps:
            # the recorded text was cut at a hallucinated <tool_response>; restore the tag so the cut recurs
            text = step.model_text + ("<tool_response>" if "tool_response_cut" in step.action.repairs else "")
            turns.append(
                PolicyOutput(
                    text=text,
                    prompt_tokens=step.prompt_tokens,
                    completion_tokens=step.completion_tokens,
                    finish_reason=step.finish_reason,
                    info=dict(step.policy_info),
                )
            )
        return cls(turns, **kwargs)

    async def __call__(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        """Return the scripted turn for this point of the conversation."""
        if self.record:
            self.calls.append(tuple(messages))
        index = sum(1 for message in messages if message.role == "assistant")
        delay = (
            self.delay_s
            if isinstance(self.delay_s, (int, float))
            else self.delay_s[min(index, len(self.turns) - 1)]
        )
        if delay:
            await asyncio.sleep(delay)
        if index >= len(self.turns):
            raise PolicyError(
                f"scripted policy exhausted: asked for turn {index}, the script has {len(self.turns)}"
            )
        turn = self.turns[index]
        if isinstance(turn, BaseException):
            raise turn
        if callable(turn) and not isinstance(turn, PolicyOutput):
            turn = turn(messages)
        # anything but text is passed through unchanged, so tests can exercise the runner's type check
        return PolicyOutput(text=turn) if isinstance(turn, str) else turn  # type: ignore[return-value]
