"""Helpers shared by the eval tests: tiny benchmark folders, scripted servers' responders."""

import json
import re
from pathlib import Path

from chat_server import Reply
from PIL import Image


def write_bc_vl(folder: Path, n: int) -> Path:
    """A BrowseComp-VL level-1 file of ``n`` project-made rows (answer of case i is ``ans<i>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 24), (10, 120, 200)).save(folder / "img.png")
    path = folder / "bc_vl_level1.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "question": f"Question number {i}?",
                    "image_path": "img.png",
                    "answers": [f"ans{i}"],
                    "domain": "test",
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


def answering_responder(delay_s: float = 0.0):
    """An endpoint policy that answers question i with ans<i> (wrong for multiples of 3)."""

    def respond(body):
        first_user = next(m for m in body["messages"] if m["role"] == "user")
        content = first_user["content"]
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        i = int(re.search(r"Question number (\d+)", text).group(1))
        answer = "wrong" if i % 3 == 0 else f"ans{i}"
        return Reply(f"<think>I know this.</think><response>{answer}</response>", delay_s=delay_s)

    return respond
