"""The unified tool environment: tools, turn parser, image store, episode runner and transcripts.

Importing this package loads no training framework, no torch and no OpenCV; tool backends are imported
when a :class:`ToolEnvironment` builds them.

Example:
    >>> import asyncio
    >>> from opensearch_vl.tools_env import ScriptedPolicy, Task, ToolEnvironment, run_episode
    >>> policy = ScriptedPolicy(["<think>easy</think><response>4</response>"])
    >>> task = Task(id="q", question="2+2?")
    >>> asyncio.run(run_episode(policy, task, ToolEnvironment(tools=[]))).final_answer
    '4'
"""

from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.environment import ToolEnvironment, ToolOutcome
from opensearch_vl.tools_env.images import ImageStore, StoredImage
from opensearch_vl.tools_env.observation import (
    format_error,
    observation_message,
    parse_error,
    transcript_messages,
    truncate_text,
)
from opensearch_vl.tools_env.parser import (
    INVALID_REASONS,
    WELL_FORMED_PATTERN,
    cut_at_tool_response,
    parse_turn,
)
from opensearch_vl.tools_env.policy import (
    ChatMessage,
    ChatPolicy,
    ImagePart,
    PolicyError,
    PolicyOutput,
    TextPart,
)
from opensearch_vl.tools_env.runner import (
    EpisodeLimits,
    TokenCounter,
    replay_episode,
    run_episode,
    run_episodes,
)
from opensearch_vl.tools_env.scripted_policy import ScriptedPolicy, ScriptedTurn
from opensearch_vl.tools_env.task import Task
from opensearch_vl.tools_env.tool import (
    FunctionTool,
    Tool,
    ToolFactory,
    ToolResult,
    ToolSpec,
    available_tools,
    register_tool,
    tool_factory,
)
from opensearch_vl.tools_env.transcript import (
    TRANSCRIPT_VERSION,
    Action,
    ImageRecord,
    Score,
    Step,
    TaskInfo,
    Termination,
    Transcript,
)
from opensearch_vl.tools_env.validation import validate_arguments

__all__ = [
    "TRANSCRIPT_VERSION",
    "INVALID_REASONS",
    "WELL_FORMED_PATTERN",
    "Action",
    "ChatMessage",
    "ChatPolicy",
    "EpisodeLimits",
    "FunctionTool",
    "ImagePart",
    "ImageRecord",
    "ImageStore",
    "PolicyError",
    "PolicyOutput",
    "Score",
    "ScriptedPolicy",
    "ScriptedTurn",
    "Step",
    "StoredImage",
    "Task",
    "TaskInfo",
    "Termination",
    "TextPart",
    "TokenCounter",
    "Tool",
    "ToolEnvConfig",
    "ToolEnvironment",
    "ToolFactory",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "available_tools",
    "cut_at_tool_response",
    "format_error",
    "observation_message",
    "parse_error",
    "parse_turn",
    "register_tool",
    "replay_episode",
    "run_episode",
    "run_episodes",
    "tool_factory",
    "transcript_messages",
    "truncate_text",
    "validate_arguments",
]
