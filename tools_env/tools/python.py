"""python_interpreter: run Python code in the sandbox and return what it printed.

A run that raises, exits non-zero or hits a limit is a tool error (category ``sandbox``, or ``timeout`` for
the wall-time limit) whose message carries the output and traceback, so the model can fix its code.
The isolation mechanism used is recorded in ``info["sandbox"]``.

Example:
    >>> from opensearch_vl.tools_env.config import ToolEnvConfig
    >>> tool = PythonTool(ToolEnvConfig.model_validate({"python": {"mechanism": "rlimits"}}))
    >>> tool({"code": "sum(range(10))"}, None).text
    '45'
"""

from __future__ import annotations

from typing import Any

from opensearch_vl.tools_env.backends.sandbox import PythonSandbox, SandboxResult
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool

from opensearch_vl.errors import ToolError

__all__ = ["PYTHON_INTERPRETER", "PythonTool"]

PYTHON_INTERPRETER = ToolSpec(
    name="python_interpreter",
    description="Run Python 3 code (calculations, data processing) and return what it prints; the value of a "
    "final bare expression is printed too. No network; files only in the working directory; "
    "numpy is available.",
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "The Python source to run."}},
        "required": ["code"],
    },
)

_LIMIT_TEXT = {
    "wall_time": "it ran past the wall-time limit of {wall}s",
    "cpu_time": "it used more than {cpu}s of CPU time",
    "memory": "it ran out of memory (limit {mem} MB)",
    "output": "it printed far more than the output limit",
    "file_size": "it wrote a file larger than the file-size limit",
}


def _output(result: SandboxResult, marker: str) -> str:
    parts = []
    if result.stdout.strip():
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr.strip():
        parts.append("stderr:\n" + result.stderr.rstrip("\n"))
    text = "\n".join(parts)
    return text + (f"\n{marker}" if result.truncated else "")


class PythonTool:
    """Runs the ``code`` argument in a :class:`PythonSandbox`."""

    def __init__(self, config: ToolEnvConfig) -> None:
        self.settings = config.python
        self.sandbox = PythonSandbox(config.python)

    def __call__(self, arguments: dict[str, Any], store: Any) -> ToolResult:
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ToolError(
                "bad_arguments",
                'python_interpreter: give the source in "code", e.g. {"code": "print(2**10)"}',
            )
        result = self.sandbox.run(code)
        marker = f"[output truncated to {self.settings.max_output_bytes} bytes]"
        info = {
            "sandbox": result.mechanism,
            "exit_code": result.exit_code,
            "limit": result.limit,
            "duration_s": result.duration_s,
            "truncated": result.truncated,
        }
        if result.ok:
            return ToolResult(text=_output(result, marker) or "(no output)", info=info)
        output = _output(result, marker)
        if result.limit is not None:
            reason = _LIMIT_TEXT[result.limit].format(
                wall=self.settings.wall_seconds, cpu=self.settings.cpu_seconds, mem=self.settings.memory_mb
            )
            category = "timeout" if result.limit == "wall_time" else "sandbox"
            raise ToolError(
                category,
                f"python_interpreter: the code was stopped because {reason}."
                + (f"\n{output}" if output else ""),
            )
        raise ToolError(
            "sandbox", f"python_interpreter: the code failed (exit status {result.exit_code}).\n{output}"
        )


@register_tool("python_interpreter")
def make_python_interpreter(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The python_interpreter tool (the sandbox mechanism is chosen once, here)."""
    return FunctionTool(PYTHON_INTERPRETER, PythonTool(config))
