"""The input of one episode: a question, its images and (when known) the reference answers.

Benchmark loaders, SFT synthesis and RL datasets all produce :class:`Task` objects; the episode runner turns
one into a :class:`~opensearch_vl.tools_env.transcript.Transcript`.

Example:
    >>> from PIL import Image
    >>> task = Task(id="q1", question="What breed is this dog?", images=[Image.new("RGB", (8, 8))],
    ...             answers=["beagle"])
    >>> task.info(["img_1"]).image_ids
    ['img_1']
"""

from __future__ import annotations

from typing import Any

from opensearch_vl.tools_env.transcript import TaskInfo, Transcript
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Task"]


class Task(BaseModel):
    """One question for the agent. Unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    id: str
    """Case id, unique within its benchmark or dataset."""
    question: str
    """The question text, shown after the images in the first user turn."""
    images: list[Any] = Field(default_factory=list)
    """Task images, in order (they become ``img_1``…): anything ``ImageStore.add`` accepts — a PIL image,
    bytes, a data URI, a ``{"bytes", "path"}`` dict, a path under the configured image roots, or a URL."""
    answers: list[str] = Field(default_factory=list)
    """Reference answer first, then aliases; empty when unknown."""
    benchmark: str | None = None
    """Benchmark or dataset name."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else from the source row; must be JSON-serializable (it is copied into the transcript)."""

    @classmethod
    def from_transcript(cls, transcript: Transcript) -> Task:
        """The task a transcript recorded, its images read back from the transcript's image store.

        Example:
            >>> Task.from_transcript(Transcript(task=TaskInfo(id="a", question="q"))).id
            'a'
        """
        info = transcript.task
        return cls(
            id=info.id,
            question=info.question,
            answers=list(info.answers),
            benchmark=info.benchmark,
            metadata=dict(info.metadata),
            images=[transcript.image_bytes(i) for i in info.image_ids],
        )

    def info(self, image_ids: list[str]) -> TaskInfo:
        """The transcript's record of this task, given the store ids its images received.

        Example:
            >>> Task(id="a", question="q").info([]).question
            'q'
        """
        return TaskInfo(
            id=self.id,
            question=self.question,
            answers=list(self.answers),
            image_ids=list(image_ids),
            benchmark=self.benchmark,
            metadata=dict(self.metadata),
        )
