"""The core stays light: importing the tool environment loads no training framework, torch or OpenCV, and
its public surface is complete and documented."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import opensearch_vl.tools_env as tools_env

HEAVY = ["torch", "verl", "llamafactory", "rllm", "cv2", "transformers"]


def _loaded_after(statement: str) -> list[str]:
    code = f"""
import json, sys
{statement}
print(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}})))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    return sorted(loaded & set(HEAVY))


def test_importing_the_core_loads_no_framework():
    statement = (
        "import opensearch_vl.tools_env; from opensearch_vl.tools_env import runner, parser, environment, "
        "observation, validation, scripted_policy, task; import opensearch_vl.cli.tools"
    )
    assert _loaded_after(statement) == []


def test_a_scripted_episode_without_tools_loads_no_framework():
    statement = """
import asyncio
from opensearch_vl.tools_env import ScriptedPolicy, Task, ToolEnvironment, run_episode
policy = ScriptedPolicy(["<think>a</think><response>b</response>"])
t = asyncio.run(run_episode(policy, Task(id="x", question="?"),
                            ToolEnvironment(tools=[])))
assert t.termination == "answer"
"""
    assert _loaded_after(statement) == []


def test_public_surface_is_complete_and_documented():
    assert len(tools_env.__all__) == len(set(tools_env.__all__))
    for name in tools_env.__all__:
        obj = getattr(tools_env, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__ and obj.__doc__.strip(), f"{name} has no docstring"
    public_functions = {
        n for n, o in vars(tools_env).items() if inspect.isfunction(o) and not n.startswith("_")
    }
    assert public_functions <= set(tools_env.__all__)
