"""Policies the evaluation drives: an OpenAI-compatible endpoint, a local transformers model, or a script.

:func:`make_policy` turns the ``--model`` argument into a policy factory:

- ``http://…`` / ``https://…``: :class:`OpenAICompatPolicy` (the URL is the API base, e.g. ``…/v1``);
- ``scripted:FILE``: a JSONL file of ``{"id": case_id, "turns": [model text, …]}``, replayed per case by the
  tools_env :class:`~opensearch_vl.tools_env.scripted_policy.ScriptedPolicy` (tests, the demo's oracle);
- a folder: :class:`TransformersPolicy` (imported lazily; needs torch and transformers).

Example:
    >>> factory = make_policy("scripted:eval/data/mini/oracle_turns.jsonl")  # doctest: +SKIP
    >>> policy = factory.for_case("mini-1")  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opensearch_vl.eval.chat_client import EndpointConfig
from opensearch_vl.eval.policies.openai_compat import OpenAICompatPolicy, SamplingConfig, to_openai_messages
from opensearch_vl.tools_env.policy import ChatPolicy, PolicyError
from opensearch_vl.tools_env.scripted_policy import ScriptedPolicy

from opensearch_vl.errors import ConfigError, DataError
from opensearch_vl.jsonl import iter_jsonl_objects

__all__ = [
    "OpenAICompatPolicy",
    "SamplingConfig",
    "PolicyFactory",
    "make_policy",
    "load_script",
    "to_openai_messages",
]


@dataclass
class PolicyFactory:
    """The policy to use for each case (one shared policy, or one script per case)."""

    meta: dict[str, Any]
    """Recorded on every transcript as ``Transcript.policy``."""
    shared: ChatPolicy | None = None
    scripts: dict[str, list[str]] = field(default_factory=dict)

    def for_case(self, case_id: str) -> ChatPolicy:
        """The policy answering case ``case_id``."""
        if self.shared is not None:
            return self.shared
        if case_id not in self.scripts:
            return ScriptedPolicy([PolicyError(f"the script has no turns for case {case_id!r}")])
        return ScriptedPolicy(self.scripts[case_id])


def load_script(path: str | Path) -> dict[str, list[str]]:
    """Read a scripted-policy JSONL file: one ``{"id": …, "turns": […]}`` object per line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"scripted policy file {path} does not exist")
    scripts: dict[str, list[str]] = {}
    for lineno, row in iter_jsonl_objects(path):
        try:
            scripts[str(row["id"])] = [str(t) for t in row["turns"]]
        except (KeyError, TypeError) as exc:
            raise DataError(f'{path}:{lineno}: expected {{"id": ..., "turns": [...]}} ({exc})') from exc
    return scripts


def make_policy(
    model: str,
    *,
    sampling: SamplingConfig | None = None,
    model_name: str | None = None,
    endpoint_options: dict[str, Any] | None = None,
    device_map: Any = "auto",
    max_context_tokens: int | None = None,
) -> PolicyFactory:
    """Build the policy ``--model`` names (see the module docstring)."""
    sampling = sampling or SamplingConfig()
    if model.startswith("scripted:"):
        file = model.split(":", 1)[1]
        return PolicyFactory(meta={"kind": "scripted", "script": str(file)}, scripts=load_script(file))
    if model.startswith(("http://", "https://")):
        endpoint = EndpointConfig(base_url=model, model=model_name or "default", **(endpoint_options or {}))
        policy = OpenAICompatPolicy(endpoint, sampling)
        return PolicyFactory(meta=policy.meta, shared=policy)
    if Path(model).is_dir():
        from opensearch_vl.eval.policies.transformers_local import TransformersPolicy

        local = TransformersPolicy(
            model, sampling, device_map=device_map, max_context_tokens=max_context_tokens
        )
        return PolicyFactory(meta=local.meta, shared=local)
    raise ConfigError(
        f"--model {model!r}: expected an http(s):// endpoint URL, scripted:FILE, or a checkpoint "
        "folder that exists"
    )
