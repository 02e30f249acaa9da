"""The transcript: one episode of the agent against the tools, recorded completely.

It is the one central data type. An eval log is a header plus transcripts; an RL episode (rLLM, verl agent loop)
and an SFT sample (LLaMA-Factory ShareGPT) are *conversions* of it, never parallel structures. It holds
everything those conversions need, so none of them re-runs anything:

- the task (question, answers, task image ids), the system prompt and the tool schemas the model saw;
- one :class:`Step` per model turn: the raw model text, the parsed action, the observation shown back,
  the image ids the step produced, error flag and category, latencies;
- the fatal-cascade bookkeeping (``fatal_step_index``: first step of K consecutive error steps) and the
  termination reason;
- scores (a ``None`` value means not run / unscored), metrics, timing, the producing policy and version.

Images are stored once, by content hash (SHA-256 of their pixels), *beside* the JSON file in an
``images/`` folder; the JSON refers to them by episode id (``img_1``…) through :attr:`Transcript.images`.

Example:
    >>> t = Transcript(task=TaskInfo(id="q1", question="What is shown?"))
    >>> Transcript.model_validate_json(t.model_dump_json()).task.id
    'q1'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from opensearch_vl import __version__
from opensearch_vl.atomic_write import atomic_write_bytes
from opensearch_vl.errors import TranscriptFormatError

__all__ = [
    "TRANSCRIPT_VERSION",
    "Termination",
    "ActionKind",
    "TaskInfo",
    "ImageRecord",
    "Action",
    "Step",
    "Score",
    "Transcript",
]

TRANSCRIPT_VERSION = 1

Termination = Literal[
    "answer",  # the model gave a final answer
    "fatal_cascade",  # K consecutive error steps
    "max_turns",  # the turn limit was reached without an answer
    "max_tool_calls",  # the tool-call limit was reached without an answer
    "context_overflow",  # the next prompt would exceed the context budget
    "policy_error",  # the policy (model server) failed
    "timeout",  # the episode's wall-time limit
    "replay_miss",  # replay-only cache mode met an unrecorded call
    "environment_error",  # a failure of the harness itself (recorded, never raised)
]
ActionKind = Literal["tool_call", "answer", "invalid"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskInfo(_Model):
    """The task the episode solved."""

    id: str
    """Case id, unique within its benchmark or dataset."""
    question: str
    """The question text shown to the model (without the system prompt)."""
    answers: list[str] = Field(default_factory=list)
    """Reference answer first, then aliases. Empty when unknown (e.g. SFT synthesis without labels)."""
    image_ids: list[str] = Field(default_factory=list)
    """Ids of the task images in the episode's store (``img_1``…), in the order shown."""
    benchmark: str | None = None
    """Benchmark or dataset name."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else from the source row (category, level, source URL); JSON-serializable."""


class ImageRecord(_Model):
    """One image of the episode, stored by content hash beside the transcript."""

    id: str
    """Episode id: ``img_1``…"""
    sha256: str
    """Content hash of the pixels (:func:`~opensearch_vl.tools_env.images.pixel_sha256`); the file is
    ``images/<sha256>.png`` beside the transcript."""
    width: int
    height: int
    origin: str
    """``task`` or the name of the tool that produced it."""
    step_index: int | None = None
    """Index of the step that produced it; ``None`` for task images."""


class Action(_Model):
    """A model turn, parsed into exactly one of: tool call, final answer, invalid."""

    kind: ActionKind
    think: str | None = None
    """Content of the ``<think>`` block, if any."""
    tool: str | None = None
    """Tool name (kind == tool_call)."""
    arguments: dict[str, Any] | None = None
    """Tool arguments after repair and validation (kind == tool_call)."""
    answer: str | None = None
    """The final answer text (kind == answer)."""
    invalid_reason: str | None = None
    """Why the turn could not be parsed (kind == invalid): no_action, multiple_actions, unknown_tool, …"""
    invalid_detail: str | None = None
    """Human-readable explanation of ``invalid_reason`` (the JSON error, the schema violations)."""
    repairs: list[str] = Field(default_factory=list)
    """Repairs applied to make the turn parse (code_fence, trailing_comma, single_quotes, …)."""
    well_formed: bool = False
    """True iff the turn is exactly ``<think>…</think>`` then one ``<tool_call>`` or ``<response>``/``<answer>``."""


class Step(_Model):
    """One model turn and what the environment answered."""

    index: int
    model_text: str
    """The model's raw text for this turn (already cut at any ``<tool_response>`` it hallucinated)."""
    action: Action
    observation: str | None = None
    """The text shown back inside ``<tool_response>`` (``None`` for the final answer turn)."""
    observation_image_ids: list[str] = Field(default_factory=list)
    """Ids of the images attached to the observation (produced by this step's tool), in order."""
    error: bool = False
    """True iff this is an error step (counts towards the fatal cascade)."""
    error_category: str | None = None
    """One of :data:`opensearch_vl.errors.ERROR_CATEGORIES` when ``error``."""
    tool_info: dict[str, Any] = Field(default_factory=dict)
    """Backend details from the tool (backend, cache hit, URL, truncation)."""
    model_latency_s: float | None = None
    tool_latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    """Why the policy stopped generating this turn (``stop``, ``length``), when it says."""
    policy_info: dict[str, Any] = Field(default_factory=dict)
    """The policy's extras for this turn (token ids, log-probs, request id): ``PolicyOutput.info``."""


class Score(_Model):
    """A named score. ``value is None`` means unscored (judge failed to give a verdict), never 0."""

    value: float | None
    explanation: str | None = None
    judge_model: str | None = None
    prompt_sha256: str | None = None
    raw_output: str | None = None
    fallback: bool = False
    """True when the rule-based fallback produced the value (judge unavailable)."""
    metadata: dict[str, Any] = Field(default_factory=dict)


class Transcript(_Model):
    """One episode, complete. See the module docstring."""

    version: int = TRANSCRIPT_VERSION
    producer: str = f"opensearch-vl {__version__}"
    task: TaskInfo
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """OpenAI function schemas of the tools offered, as shown to the model."""
    images: list[ImageRecord] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    final_answer: str | None = None
    termination: Termination | None = None
    termination_detail: str | None = None
    """Human-readable detail: the policy error message, the limit that was hit, …"""
    fatal_k: int = 3
    """K: how many consecutive error steps make a cascade."""
    fatal_step_index: int | None = None
    """Index of the first step of the first K-error cascade; ``None`` if there was none."""
    policy: dict[str, Any] = Field(default_factory=dict)
    """Who produced the turns: model name/path, sampling settings."""
    scores: dict[str, Score] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    started_at: float | None = None
    """Unix time at the start of the episode."""
    wall_time_s: float | None = None

    _blobs: dict[str, bytes | Callable[[], bytes]] = PrivateAttr(default_factory=dict)
    _image_dir: Path | None = PrivateAttr(default=None)

    # ---- derived views -------------------------------------------------------------------------------
    @property
    def is_fatal(self) -> bool:
        """True iff a K-error cascade happened (the steps from ``fatal_step_index`` on leave the loss)."""
        return self.fatal_step_index is not None

    @property
    def answered(self) -> bool:
        """True iff the episode ended with a final answer."""
        return self.termination == "answer"

    def image(self, image_id: str) -> ImageRecord:
        """The record of ``image_id``; raises ``KeyError`` naming the available ids."""
        for record in self.images:
            if record.id == image_id:
                return record
        raise KeyError(f"{image_id} not in transcript images {[r.id for r in self.images]}")

    def image_bytes(self, image_id: str) -> bytes:
        """The PNG bytes of ``image_id``, from memory or from the ``images/`` folder beside the file."""
        sha = self.image(image_id).sha256
        if sha in self._blobs:
            blob = self._blobs[sha]
            if callable(blob):  # encoded on first use, then kept
                blob = self._blobs[sha] = blob()
            return blob
        if self._image_dir is not None:
            path = self._image_dir / f"{sha}.png"
            if path.is_file():
                return path.read_bytes()
        raise TranscriptFormatError(
            f"image {image_id} (sha256 {sha[:12]}…) is neither in memory nor in {self._image_dir}; "
            "keep the images/ folder next to the transcript file"
        )

    def add_image(self, record: ImageRecord, png: bytes | Callable[[], bytes]) -> None:
        """Attach an image (used by the episode runner): its PNG bytes, or a callable producing them on demand."""
        self._blobs[record.sha256] = png
        self.images.append(record)

    def behaviour(self, *, include_tool_info: bool = False) -> dict[str, Any]:
        """The dump without what legitimately differs between two runs of the same episode.

        Drops timing (``started_at``, ``wall_time_s``, step latencies), ``scores`` (added after the run) and,
        unless asked, ``tool_info`` (cache hits differ between recording and replay). Two runs that behaved identically, e.g. a recorded
        episode and its replay-only re-run, have equal ``behaviour()``.

        Example:
            >>> "wall_time_s" in Transcript(task=TaskInfo(id="a", question="q")).behaviour()
            False
        """
        step_fields = {"model_latency_s", "tool_latency_s"} | (set() if include_tool_info else {"tool_info"})
        return self.model_dump(
            exclude={
                "started_at": True,
                "wall_time_s": True,
                "scores": True,
                "steps": {"__all__": step_fields},
            }
        )

    def to_messages(self, *, with_images: bool = True) -> list[Any]:
        """The chat the model saw, rebuilt as ``ChatMessage`` objects (see ``observation.transcript_messages``).

        Example:
            >>> [m.role for m in Transcript(task=TaskInfo(id="a", question="q")).to_messages()]
            ['user']
        """
        from opensearch_vl.tools_env.observation import transcript_messages

        return transcript_messages(self, with_images=with_images)

    # ---- files ---------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the JSON to ``path`` atomically and its images to ``images/`` beside it (deduplicated).

        Example:
            >>> t.save("runs/demo/q1.json")  # doctest: +SKIP
        """
        path = Path(path)
        image_dir = path.parent / "images"
        image_dir.mkdir(parents=True, exist_ok=True)
        for record in self.images:
            target = image_dir / f"{record.sha256}.png"
            if not target.exists():
                atomic_write_bytes(target, self.image_bytes(record.id))
        atomic_write_bytes(path, self.model_dump_json(indent=1).encode())
        self._image_dir = image_dir
        return path

    @classmethod
    def load(cls, path: str | Path) -> Transcript:
        """Read a transcript written by :meth:`save`; images are read lazily from ``images/`` beside it."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise TranscriptFormatError(f"{path}: cannot read transcript ({exc})") from exc
        version = raw.get("version") if isinstance(raw, dict) else None
        if version != TRANSCRIPT_VERSION:
            raise TranscriptFormatError(
                f"{path}: transcript version {version!r}, this opensearch-vl reads version {TRANSCRIPT_VERSION}"
            )
        try:
            transcript = cls.model_validate(raw)
        except ValueError as exc:
            raise TranscriptFormatError(f"{path}: not a valid transcript: {exc}") from exc
        transcript._image_dir = path.parent / "images"
        return transcript
