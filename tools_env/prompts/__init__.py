"""Prompt texts shipped as package data (``*.txt`` beside this file).

Example:
    >>> "{tools}" in load_prompt("system")
    True
"""

from __future__ import annotations

from importlib import resources

__all__ = ["load_prompt"]


def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.txt``; a missing name lists the available prompts.

    Example:
        >>> load_prompt("system").startswith("You are a visual investigation agent")
        True
    """
    folder = resources.files(__name__)
    path = folder / f"{name}.txt"
    if not path.is_file():
        available = sorted(p.name.removesuffix(".txt") for p in folder.iterdir() if p.name.endswith(".txt"))
        raise FileNotFoundError(f"no prompt {name!r}; available: {', '.join(available)}")
    return path.read_text(encoding="utf-8")
