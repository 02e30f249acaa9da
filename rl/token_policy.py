"""A :class:`~opensearch_vl.tools_env.policy.ChatPolicy` over a token-in/token-out generation backend.

The episode runner speaks chat messages; RL rollout servers (verl's server manager, rLLM's ``VerlEngine``)
speak token ids plus images. :class:`TokenPolicy` bridges them for **one episode**: it keeps a
:class:`~opensearch_vl.rl.tokenize.TokenTrajectory`, appends only what is new in each call (the observation
turn), sends the full id sequence and every image so far to the backend, and records the completion ids and
log-probs exactly as generated. After the episode, ``policy.trajectory`` is the token-exact record the
trainer needs.

The backend is any async ``generate(prompt_ids, images) -> Generation``; the adapters in
``opensearch_vl.plugins`` wrap verl's and rLLM's.

Example:
    >>> async def generate(prompt_ids, images):
    ...     return Generation(token_ids=[5, 6, 7])
    >>> policy = TokenPolicy(ChatRenderer(processor), generate)  # doctest: +SKIP
    >>> transcript = await run_episode(policy, task, env)  # doctest: +SKIP
    >>> row = policy.trajectory.assemble(kept_steps=len(transcript.steps))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opensearch_vl.rl.tokenize import ChatRenderer, TokenTrajectory
from opensearch_vl.tools_env.policy import ChatMessage, PolicyError, PolicyOutput
from PIL import Image

__all__ = ["Generation", "GenerateFn", "TokenPolicy"]


@dataclass(frozen=True)
class Generation:
    """What a token backend returned for one turn."""

    token_ids: list[int]
    logprobs: list[float] | None = None
    finish_reason: str | None = None
    info: dict[str, Any] | None = None


GenerateFn = Callable[[list[int], list[Image.Image]], Awaitable[Generation]]
"""``async (prompt_ids, images) -> Generation``: prompt ids carry expanded image-pad tokens, ``images`` are
all
images of the conversation so far, in order."""


class TokenPolicy:
    """Chat policy for one episode over a token backend (see the module docstring).

    Args:
        renderer: renders messages through the model's processor.
        generate: the token backend.
        max_prompt_tokens: raise ``PolicyError(context_overflow=True)`` when the next prompt is longer
            (the runner ends the episode with ``context_overflow``); ``None`` = no check.

    Example:
        >>> policy = TokenPolicy(renderer, generate, max_prompt_tokens=74000)  # doctest: +SKIP
    """

    def __init__(
        self, renderer: ChatRenderer, generate: GenerateFn, *, max_prompt_tokens: int | None = None
    ) -> None:
        self.renderer = renderer
        self.generate = generate
        self.max_prompt_tokens = max_prompt_tokens
        self.trajectory = TokenTrajectory(renderer)
        self._seen = 0
        self._last_text: str | None = None

    async def __call__(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        messages = list(messages)
        if not self.trajectory.segments:
            if any(m.role == "assistant" for m in messages):
                raise PolicyError(
                    "TokenPolicy serves one episode from its first turn; got a history with "
                    "assistant turns (create a new TokenPolicy per episode)"
                )
            self.trajectory.begin(messages)
        else:
            new = messages[self._seen :]
            if not new or new[0].role != "assistant":
                raise PolicyError(
                    f"expected the previous assistant turn at message {self._seen}, got "
                    f"{[m.role for m in new]} (one TokenPolicy per episode, messages append-only)"
                )
            if new[0].text != self._last_text:
                self.trajectory.replace_last_completion_text(new[0].text)
            if len(new) < 2:
                raise PolicyError("no new observation turn after the assistant turn")
            self.trajectory.add_observation(new[1:])
        self._seen = len(messages)
        prompt_ids = self.trajectory.token_ids
        if self.max_prompt_tokens is not None and len(prompt_ids) > self.max_prompt_tokens:
            raise PolicyError(
                f"prompt of {len(prompt_ids)} tokens exceeds the budget of {self.max_prompt_tokens}",
                context_overflow=True,
            )
        generation = await self.generate(prompt_ids, self.trajectory.images)
        self.trajectory.add_completion(generation.token_ids, generation.logprobs)
        text = self.renderer.decode(generation.token_ids)
        self._last_text = text
        info = dict(generation.info or {})
        return PolicyOutput(
            text=text,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(generation.token_ids),
            finish_reason=generation.finish_reason,
            info=info,
        )
