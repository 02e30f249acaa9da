"""RL data preparation: an RL parquet/JSONL (question, answer, image bytes or paths) → rLLM rows + verl
parquet.

Input layout (SearchVL-RL-8k / Vision-DeepResearch RL demo, paper §4.2): one row per question with
``question``, ``answer`` (str or list; ``answers`` also accepted) and ``image`` or ``images`` (bytes, a
``{"bytes", "path"}`` dict, or a path relative to the input file). Every image is decoded first; problems are
collected and reported together, each naming the row and the reason.

Output under ``out_dir``:

- ``images/<row>_<k>.png`` — the decoded images;
- ``rllm/<split>.jsonl`` — rows ``{id, question, answers, images: [absolute png paths]}`` that the rLLM
  workflow reads (register them with ``DatasetRegistry``: ``opensearch-vl rl prepare --register NAME`` does it
  when rLLM is installed); put ``out_dir/images`` in ``tools.image_roots``;
- ``verl/<split>.parquet`` — verl's RL layout: ``prompt`` (one user turn ``<image>…question``), ``images``
  (``{"bytes"}``), ``data_source``, ``agent_name: vision_deepresearch``, ``reward_model.ground_truth``,
  ``extra_info`` (id, question, answers, index).

Example:
    >>> report = prepare_rl_data("rl.parquet", "data/rl", test_fraction=0.1)  # doctest: +SKIP
    >>> report.counts  # doctest: +SKIP
    {'train': 7200, 'test': 800}
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opensearch_vl.tools_env.images import decode_image

from opensearch_vl.errors import DataError, ToolError

__all__ = ["PrepareReport", "prepare_rl_data", "read_rows", "AGENT_NAME"]

AGENT_NAME = "vision_deepresearch"
_MAX_LISTED = 20


@dataclass(frozen=True)
class PrepareReport:
    """What :func:`prepare_rl_data` wrote."""

    out_dir: Path
    counts: dict[str, int]
    rllm_files: dict[str, Path]
    verl_files: dict[str, Path]
    images: int
    skipped: list[str] = field(default_factory=list)


def read_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """Rows of a ``.parquet`` or ``.jsonl`` file, as dicts.

    Example:
        >>> next(read_rows("rl.jsonl"))["question"]  # doctest: +SKIP
        'Who painted this?'
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file; give an RL .parquet or .jsonl")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=256):
            yield from batch.to_pylist()
    elif path.suffix in (".jsonl", ".json"):
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise DataError(f"{path}:{n}: not JSON ({exc})") from exc
    else:
        raise DataError(f"{path}: unsupported extension {path.suffix!r}; use .parquet or .jsonl")


def _image_sources(row: dict[str, Any]) -> list[Any]:
    value = row.get("images", row.get("image"))
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _load(source: Any, base: Path) -> bytes:
    if isinstance(source, dict):
        if source.get("bytes"):
            return bytes(source["bytes"])
        if source.get("path"):
            return _load(source["path"], base)
        raise ValueError(f"image dict without bytes or path (keys {sorted(source)})")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, str):
        path = Path(source) if Path(source).is_absolute() else base / source
        if not path.is_file():
            raise ValueError(f"image file {source!r} not found (looked at {path})")
        return path.read_bytes()
    raise ValueError(f"unsupported image value of type {type(source).__name__}")


def prepare_rl_data(
    input_path: str | Path,
    out_dir: str | Path,
    *,
    test_fraction: float = 0.1,
    seed: int = 42,
    data_source: str = "searchvl_rl",
    max_rows: int | None = None,
    skip_bad: bool = False,
) -> PrepareReport:
    """Convert an RL file (see the module docstring); every image must decode or the row is reported.

    Args:
        test_fraction: share of rows in the ``test`` split (0 = train only); shuffled with ``seed``.
        skip_bad: leave out bad rows (listed in the report) instead of failing.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from opensearch_vl.tools_env.images import png_bytes

    if not 0.0 <= test_fraction < 1.0:
        raise DataError(f"test_fraction={test_fraction}; use a value in [0, 1)")
    input_path, out = Path(input_path), Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    good: list[dict[str, Any]] = []
    problems: list[str] = []
    n_images = 0
    for index, row in enumerate(read_rows(input_path)):
        if max_rows is not None and index >= max_rows:
            break
        question = str(row.get("question") or "").strip()
        answers = row.get("answers", row.get("answer"))
        answers = [
            str(a) for a in (answers if isinstance(answers, (list, tuple)) else [answers]) if a is not None
        ]
        issues = [] if question else ["no question"]
        if not answers:
            issues.append("no answer")
        files = []
        for k, source in enumerate(_image_sources(row)):
            try:
                image = decode_image(_load(source, input_path.parent), what=f"image {k}")
            except (ToolError, ValueError, OSError) as exc:
                message = str(getattr(exc, "message", exc))
                issues.append(message if message.startswith(f"image {k}") else f"image {k}: {message}")
                continue
            target = out / "images" / f"{index:06d}_{k}.png"
            target.write_bytes(png_bytes(image))
            files.append(target.resolve())
        if not files and not issues:
            issues.append("no image")
        if issues:
            problems.append(f"row {index} (id {row.get('id', index)}): " + "; ".join(issues))
            continue
        n_images += len(files)
        good.append(
            {
                "id": str(row.get("id", index)),
                "question": question,
                "answers": answers,
                "images": files,
                "index": index,
            }
        )
    if problems and not skip_bad:
        listed = "\n  ".join(problems[:_MAX_LISTED])
        more = f"\n  … and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
        raise DataError(
            f"{input_path}: {len(problems)} bad rows (fix them or pass --skip-bad):\n  {listed}{more}"
        )
    if not good:
        raise DataError(f"{input_path}: no usable rows")
    random.Random(seed).shuffle(good)
    n_test = int(round(len(good) * test_fraction))
    splits = {"train": good[n_test:], **({"test": good[:n_test]} if n_test else {})}
    rllm_files, verl_files = {}, {}
    for split, rows in splits.items():
        rllm_path = out / "rllm" / f"{split}.jsonl"
        rllm_path.parent.mkdir(parents=True, exist_ok=True)
        with rllm_path.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(
                    json.dumps({**r, "images": [str(p) for p in r["images"]]}, ensure_ascii=False) + "\n"
                )
        rllm_files[split] = rllm_path
        verl_rows = [
            {
                "data_source": data_source,
                "agent_name": AGENT_NAME,
                "prompt": [{"role": "user", "content": "<image>" * len(r["images"]) + r["question"]}],
                "images": [{"bytes": p.read_bytes()} for p in r["images"]],
                "reward_model": {"style": "rule", "ground_truth": r["answers"][0]},
                "extra_info": {
                    "id": r["id"],
                    "question": r["question"],
                    "answers": r["answers"],
                    "index": r["index"],
                    "split": split,
                },
            }
            for r in rows
        ]
        verl_path = out / "verl" / f"{split}.parquet"
        verl_path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(verl_rows), verl_path)
        verl_files[split] = verl_path
    return PrepareReport(
        out, {k: len(v) for k, v in splits.items()}, rllm_files, verl_files, n_images, problems
    )
