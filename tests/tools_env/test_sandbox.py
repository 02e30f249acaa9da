"""python_interpreter: escapes tried under every isolation mechanism that works here (rlimits always does)."""

from __future__ import annotations

import time

import pytest
from opensearch_vl.tools_env.backends.sandbox import PythonSandbox, available_mechanisms
from opensearch_vl.tools_env.config import PythonSettings, ToolEnvConfig
from opensearch_vl.tools_env.tool import tool_factory

from opensearch_vl.errors import PrerequisiteError, ToolError

MECHANISMS = available_mechanisms()


@pytest.fixture(params=MECHANISMS)
def sandbox(request):
    return PythonSandbox(
        PythonSettings(
            mechanism=request.param, cpu_seconds=1, wall_seconds=6, memory_mb=512, max_output_bytes=2000
        )
    )


def test_rlimits_fallback_always_available():
    assert MECHANISMS[-1] == "rlimits"


def test_runs_code_and_echoes_last_expression(sandbox):
    result = sandbox.run("import numpy as np\nx = np.arange(10)\nprint('sum', x.sum())\nx.mean()")
    assert (
        result.ok and result.stdout == "sum 45\nnp.float64(4.5)\n" and result.mechanism == sandbox.mechanism
    )


def test_scratch_is_writable_and_fresh(sandbox):
    first = sandbox.run("open('notes.txt', 'w').write('hi')\nimport os\nsorted(os.listdir('.'))")
    assert first.ok and first.stdout == "['notes.txt']\n"
    assert sandbox.run("import os\nos.listdir('.')").stdout == "[]\n"


def test_network_is_blocked(sandbox, http_server):
    code = (
        "import urllib.request\n"
        f"print(urllib.request.urlopen('{http_server.base_url}/pages/plain.txt', timeout=3).read())"
    )
    before = http_server.count("/pages/plain.txt")
    result = sandbox.run(code)
    assert not result.ok and "herons" not in result.stdout
    assert http_server.count("/pages/plain.txt") == before


def test_writes_outside_scratch_are_blocked(sandbox, tmp_path):
    target = tmp_path / "escaped.txt"
    for code in (
        f"open({str(target)!r}, 'w').write('x')",
        f"import os\nos.open({str(target)!r}, os.O_CREAT | os.O_WRONLY)",
        f"import shutil\nshutil.copy('/etc/hostname', {str(target)!r})",
        f"import os\nos.symlink('/etc/passwd', {str(tmp_path / 'link')!r})",
        f"import pathlib\npathlib.Path({str(target)!r}).write_text('x')",
    ):
        result = sandbox.run(code)
        assert not result.ok, code
    assert list(tmp_path.iterdir()) == []


def test_subprocess_and_fork_bomb_are_blocked(sandbox):
    start = time.monotonic()
    bomb = sandbox.run("import os\nwhile True:\n    os.fork()")
    assert not bomb.ok and "os.fork is not allowed" in bomb.stderr
    shell = sandbox.run("import subprocess\nsubprocess.run(['sh', '-c', 'echo pwned'])")
    assert "pwned" not in shell.stdout and "not allowed" in shell.stderr
    system = sandbox.run("import os\nos.system('echo pwned')")
    assert "pwned" not in system.stdout
    assert time.monotonic() - start < 10


def test_native_calls_through_ctypes_are_blocked(sandbox):
    result = sandbox.run("import ctypes\nctypes.CDLL(None).fork()")
    assert not result.ok and "ctypes.dlsym is not allowed" in result.stderr


def test_memory_hog_hits_the_limit(sandbox):
    result = sandbox.run("blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 * 1024))")
    assert not result.ok and result.limit == "memory"


def test_infinite_loop_is_stopped(sandbox):
    start = time.monotonic()
    result = sandbox.run("while True:\n    pass")
    assert not result.ok and result.limit in ("cpu_time", "wall_time")
    assert time.monotonic() - start < 8


def test_sleeping_forever_hits_wall_time():
    sandbox = PythonSandbox(PythonSettings(mechanism="rlimits", wall_seconds=1.5))
    result = sandbox.run("import time\ntime.sleep(60)")
    assert result.limit == "wall_time" and result.duration_s < 4


def test_huge_output_is_capped(sandbox):
    result = sandbox.run("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)")
    assert result.limit == "output" and result.truncated
    assert len(result.stdout) + len(result.stderr) <= 2000


def test_moderate_output_is_truncated_not_killed(sandbox):
    result = sandbox.run("print('y' * 10000)")
    assert result.ok and result.truncated and len(result.stdout) == 2000


def test_unavailable_mechanism_is_a_prerequisite_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PrerequisiteError, match="mechanism: auto"):
        PythonSandbox(PythonSettings(mechanism="bwrap"))


def make_tool(**python):
    return tool_factory("python_interpreter")(ToolEnvConfig.model_validate({"python": python}), None)


async def test_tool_success_reports_mechanism():
    result = await make_tool().run({"code": "print(2 ** 10)"}, None)
    assert result.text == "1024" and result.info["sandbox"] == MECHANISMS[0] and result.info["exit_code"] == 0


async def test_tool_error_carries_traceback():
    with pytest.raises(ToolError) as info:
        await make_tool(mechanism="rlimits").run({"code": "x = 1\nprint('before')\n1 / x - 1 / 0"}, None)
    message = info.value.message
    assert info.value.category == "sandbox" and "exit status 1" in message
    assert "before" in message and 'File "<code>", line 3' in message and "ZeroDivisionError" in message
    assert "sandbox_guard" not in message and "<string>" not in message


async def test_tool_timeout_category():
    with pytest.raises(ToolError) as info:
        await make_tool(mechanism="rlimits", wall_seconds=1).run(
            {"code": "import time\ntime.sleep(30)"}, None
        )
    assert info.value.category == "timeout" and "wall-time limit of 1.0s" in info.value.message


async def test_tool_output_marker():
    result = await make_tool(mechanism="rlimits", max_output_bytes=100).run(
        {"code": "print('z' * 500)"}, None
    )
    assert result.text.endswith("[output truncated to 100 bytes]") and result.info["truncated"] is True


@pytest.mark.skipif("bwrap" not in MECHANISMS, reason="bubblewrap does not work on this machine")
def test_bwrap_sees_an_interpreter_that_lives_under_tmp(tmp_path):
    # A checkout (and its .venv) under /tmp, as CI clones are: the sandbox's private /tmp must not hide it.
    import subprocess
    import sys

    assert str(tmp_path).startswith("/tmp/")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    assert "bwrap" in available_mechanisms(python)
    box = PythonSandbox(PythonSettings(mechanism="bwrap", python_executable=python, wall_seconds=10))
    result = box.run("import sys\nprint(sys.prefix)")
    assert result.ok and result.stdout.strip() == str(tmp_path / "venv")
