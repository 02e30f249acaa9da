"""Helpers shared by the SFT tests (imported by module name; pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def make_image(width: int, height: int, color=(200, 30, 30)):
    """A solid-colour RGB image of the given size."""
    from PIL import Image

    return Image.new("RGB", (width, height), color)


def lf_env() -> dict[str, str]:
    """Environment for `llamafactory-cli` subprocesses: the venv's bin first on PATH (for `torchrun`)."""
    import os
    import sys

    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("FORCE_TORCHRUN", None)
    env.pop("USE_RAY", None)
    return env
