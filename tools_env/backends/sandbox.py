"""A subprocess sandbox for ``python_interpreter``: resource limits, no network, writes only in scratch.

Every run gets a fresh scratch folder (its working directory, ``HOME`` and ``TMPDIR``), a scrubbed
environment, ``python -I``, and these limits set before exec: CPU seconds (RLIMIT_CPU), address space
(RLIMIT_AS), file size (RLIMIT_FSIZE), open files, no core dumps, and for non-root users a process cap
(RLIMIT_NPROC). The parent enforces the wall time (killing the whole process group) and the output cap.
Inside, :mod:`sandbox_guard` installs an audit hook refusing sockets, subprocesses, ctypes and writes
outside scratch. On top of that, one OS isolation layer, the strongest available (``mechanism: auto``):

* ``bwrap``: bubblewrap; the whole filesystem read-only except scratch, private ``/tmp``, new network, PID,
  IPC and UTS namespaces, killed with its parent;
* ``unshare``: ``unshare -n`` (a network namespace with no interfaces up) when permitted;
* ``rlimits``: no OS layer; the audit hook and limits above are the enforcement.

The mechanism used is reported in every result.

Example:
    >>> from opensearch_vl.tools_env.config import PythonSettings
    >>> PythonSandbox(PythonSettings(mechanism="rlimits")).run("print(6 * 7)").stdout
    '42\\n'
"""

from __future__ import annotations

import logging
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from opensearch_vl.tools_env.backends.sandbox_guard import GUARD
from opensearch_vl.tools_env.config import PythonSettings

from opensearch_vl.errors import PrerequisiteError

__all__ = ["PythonSandbox", "SandboxResult", "available_mechanisms"]

log = logging.getLogger(__name__)
_KILL_AT_OUTPUT_MULTIPLE = 50


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one run. ``limit`` names the limit that stopped it (``wall_time``, ``cpu_time``,
    ``memory``, ``output``, ``file_size``) or is ``None``."""

    stdout: str
    stderr: str
    exit_code: int | None
    limit: str | None
    truncated: bool
    mechanism: str
    duration_s: float

    @property
    def ok(self) -> bool:
        """Exited with status 0 and hit no limit."""
        return self.exit_code == 0 and self.limit is None


def _probe(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _interpreter_dirs_under_tmp(python: str) -> list[str]:
    """Folders the interpreter needs (its venv, its real installation) that the private /tmp would hide."""
    exe = Path(python)
    candidates = {exe.parent.parent, exe.resolve().parent.parent, Path(sys.prefix), Path(sys.base_prefix)}
    tmp = Path("/tmp")
    found = {str(c.resolve()) for c in candidates if c.resolve().is_relative_to(tmp) and c.resolve() != tmp}
    return sorted(found)


def _bwrap_prefix(scratch: str, python: str = sys.executable) -> list[str]:
    keep: list[str] = []
    for folder in _interpreter_dirs_under_tmp(python):  # e.g. a CI checkout's .venv under /tmp
        keep += ["--ro-bind", folder, folder]
    return [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        *keep,
        "--bind",
        scratch,
        scratch,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--chdir",
        scratch,
    ]


def _unshare_prefix() -> list[str]:
    return ["unshare", "-n", "--"] if os.geteuid() == 0 else ["unshare", "-rn", "--"]


def available_mechanisms(python: str = sys.executable) -> list[str]:
    """Isolation mechanisms that work on this machine, strongest first (``rlimits`` always works).

    A mechanism counts only if ``python`` itself starts inside it.
    """
    found = []
    probe = [python, "-I", "-c", "pass"]
    if shutil.which("bwrap") and _probe(_bwrap_prefix(tempfile.gettempdir(), python) + probe):
        found.append("bwrap")
    if shutil.which("unshare") and _probe(_unshare_prefix() + probe):
        found.append("unshare")
    return found + ["rlimits"]


def _user_tasks(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


class PythonSandbox:
    """Runs Python code under the configured limits. Thread-safe; each run is independent.

    Args:
        settings: limits and mechanism.
    """

    def __init__(self, settings: PythonSettings) -> None:
        self.settings = settings
        self.python = settings.python_executable or sys.executable
        if settings.mechanism == "auto":
            self.mechanism = available_mechanisms(self.python)[0]
        elif settings.mechanism == "rlimits" or settings.mechanism in available_mechanisms(self.python):
            self.mechanism = settings.mechanism
        else:
            fix = (
                "apt-get install bubblewrap"
                if settings.mechanism == "bwrap"
                else "run where unshare -n is permitted"
            )
            raise PrerequisiteError(
                f"python.mechanism is {settings.mechanism!r} but it does not work here; {fix}, "
                "or use mechanism: auto"
            )
        log.info("python sandbox mechanism: %s", self.mechanism)

    def _limits(self) -> None:
        s = self.settings
        resource.setrlimit(resource.RLIMIT_CPU, (s.cpu_seconds, s.cpu_seconds + 1))
        memory = s.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (s.max_file_bytes, s.max_file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    def _preexec(self, nproc: int | None):
        def apply() -> None:
            self._limits()
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

        return apply

    def run(self, code: str) -> SandboxResult:
        """Run ``code``; never raises for the code's own failures (they are in the result)."""
        s = self.settings
        scratch = tempfile.mkdtemp(prefix="osvl-py-")
        try:
            command = [self.python, "-I", "-B", "-c", GUARD, scratch]
            if self.mechanism == "bwrap":
                command = _bwrap_prefix(scratch, self.python) + command
            elif self.mechanism == "unshare":
                command = _unshare_prefix() + command
            env = {
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": scratch,
                "TMPDIR": scratch,
                "LANG": "C.UTF-8",
                "PYTHONIOENCODING": "utf-8",
                "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
                "MPLBACKEND": "Agg",
                "MPLCONFIGDIR": scratch,
            }
            uid = os.geteuid()
            nproc = None if uid == 0 else _user_tasks(uid) + s.max_processes
            start = time.monotonic()
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=scratch,
                env=env,
                start_new_session=True,
                preexec_fn=self._preexec(nproc),
            )
            out, err, limit, truncated = self._communicate(proc, code.encode("utf-8"), start)
            exit_code = proc.returncode
            duration = time.monotonic() - start
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        signal_number = None
        if exit_code is not None and exit_code < 0:
            signal_number = -exit_code
        elif self.mechanism == "bwrap" and exit_code is not None and exit_code > 128:
            signal_number = exit_code - 128  # bwrap reports a child killed by signal N as 128 + N
        if limit is None and signal_number is not None:
            limit = {signal.SIGXCPU: "cpu_time", signal.SIGKILL: "cpu_time", signal.SIGXFSZ: "file_size"}.get(
                signal_number
            )
        stderr_text = err.decode("utf-8", "replace")
        if limit is None and "MemoryError" in stderr_text:
            limit = "memory"
        return SandboxResult(
            out.decode("utf-8", "replace"),
            stderr_text,
            exit_code,
            limit,
            truncated,
            self.mechanism,
            round(duration, 3),
        )

    def _communicate(self, proc: subprocess.Popen, data: bytes, start: float):
        cap = self.settings.max_output_bytes
        kill_at = cap * _KILL_AT_OUTPUT_MULTIPLE
        chunks = {"stdout": bytearray(), "stderr": bytearray()}
        seen = 0
        limit = None
        try:
            proc.stdin.write(data)
        except BrokenPipeError:
            pass
        finally:
            proc.stdin.close()
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr, selectors.EVENT_READ, "stderr")
        deadline = start + self.settings.wall_seconds
        open_streams = 2
        while open_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                limit = "wall_time"
                break
            for key, _ in selector.select(timeout=min(remaining, 0.5)):
                block = os.read(key.fileobj.fileno(), 65536)
                if not block:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                seen += len(block)
                buf = chunks[key.data]
                if len(chunks["stdout"]) + len(chunks["stderr"]) < cap:
                    buf += block
            if seen > kill_at:
                limit = "output"
                break
        selector.close()
        if limit is not None:
            self._kill(proc)
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()) if limit is None else 5)
        except subprocess.TimeoutExpired:
            limit = "wall_time"
            self._kill(proc)
            proc.wait(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
        truncated = seen > cap
        out, err = bytes(chunks["stdout"]), bytes(chunks["stderr"])
        total = len(out) + len(err)
        if total > cap:
            out = out[: max(0, cap - len(err))] if len(err) < cap else b""
            err = err[: cap - len(out)]
        return out, err, limit, truncated

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
