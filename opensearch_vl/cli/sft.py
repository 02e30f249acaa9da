"""`opensearch-vl sft`: check SFT data before training, and diagnose the LLaMA-Factory plugin.

    opensearch-vl sft check recipes/data/dataset_info.json --model runs/tiny-qwen3vl \\
        --template qwen3_vl_agentic_nothink --cutoff-len 32000 --image-max-pixels 262144 --write-clean
        data_clean
    opensearch-vl sft doctor

`check` reads every sample of every ShareGPT dataset in the file (or those named with `--dataset`) and prints
one
line per problem (`dataset[index] kind: reason`, see `opensearch_vl.sft.data_check`), then a summary. It exits
1
when any sample has a problem, 0 otherwise. `--write-clean DIR` writes the passing rows (image paths made
absolute) plus a `dataset_info.json` pointing at them, and `rejected.jsonl` with every dropped row's reasons.
The length check needs `--model` (a local checkpoint folder with the tokenizer and processor config).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from opensearch_vl.errors import PrerequisiteError

__all__ = ["register", "run_check", "run_doctor"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `sft` command group (`check`, `doctor`)."""
    parser = subparsers.add_parser(
        "sft", help="supervised fine-tuning data checks and LLaMA-Factory plugin status"
    )
    sub = parser.add_subparsers(dest="sft_command", metavar="SUBCOMMAND")
    check = sub.add_parser("check", help="check every sample of a dataset_info.json before training")
    check.add_argument("dataset_info", type=Path, help="LLaMA-Factory dataset_info.json")
    check.add_argument("--dataset", action="append", help="check only this entry (repeatable); default: all")
    check.add_argument(
        "--template", default="qwen3_vl_agentic_nothink", help="template the recipe trains with"
    )
    check.add_argument("--cutoff-len", type=int, default=32000, help="the recipe's cutoff_len")
    check.add_argument(
        "--image-max-pixels", type=int, default=768 * 768, help="the recipe's image_max_pixels"
    )
    check.add_argument("--image-min-pixels", type=int, default=32 * 32, help="the recipe's image_min_pixels")
    check.add_argument(
        "--model", help="local model folder (tokenizer + processor config); enables the length check"
    )
    check.add_argument(
        "--media-dir", type=Path, help="base folder of relative image paths (default: the file's folder)"
    )
    check.add_argument(
        "--write-clean", type=Path, metavar="DIR", help="write passing rows and a rejected.jsonl here"
    )
    check.add_argument("--max-lines", type=int, default=200, help="print at most this many issue lines")
    check.set_defaults(func=run_check)
    doctor = sub.add_parser(
        "doctor", help="is the LLaMA-Factory template registration active in this environment?"
    )
    doctor.set_defaults(func=run_doctor)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def run_check(args: argparse.Namespace) -> int:
    """Run `sft check`; returns 1 if any sample has a problem."""
    from opensearch_vl.sft.data_check import check_row, iter_rows, load_dataset_info

    specs = load_dataset_info(args.dataset_info, args.dataset)
    media_dir = args.media_dir or args.dataset_info.parent
    length_fn = None
    if args.model:
        from opensearch_vl.plugins.llamafactory.sample_length import TemplateLengthCounter

        length_fn = TemplateLengthCounter(
            args.model, args.template, args.image_max_pixels, args.image_min_pixels
        )
    else:
        print(
            "note: length check skipped (pass --model <checkpoint folder> to count tokens)", file=sys.stderr
        )
    kinds: Counter[str] = Counter()
    printed = total = bad = 0
    lengths: list[int] = []
    clean: dict[str, list[dict]] = {}
    rejected: list[dict] = []
    for spec in specs:
        clean[spec.name] = []
        for index, row in enumerate(iter_rows(spec)):
            total += 1
            result = check_row(row, spec, Path(media_dir), index, length_fn, args.cutoff_len)
            if result.length is not None:
                lengths.append(result.length)
            if not result.issues:
                clean[spec.name].append(_absolute_images(row, spec, Path(media_dir)))
                continue
            bad += 1
            rejected.append(
                {
                    "dataset": spec.name,
                    "index": index,
                    "issues": [i.kind + ": " + i.reason for i in result.issues],
                }
            )
            for issue in result.issues:
                kinds[issue.kind] += 1
                if printed < args.max_lines:
                    print(issue)
                    printed += 1
    if printed < sum(kinds.values()):
        print(f"... {sum(kinds.values()) - printed} more issue lines not shown (raise --max-lines)")
    summary = ", ".join(f"{k} {n}" for k, n in kinds.most_common()) or "none"
    print(f"checked {total} samples in {len(specs)} datasets: {bad} with problems ({summary})")
    if lengths:
        print(
            f"token lengths (images counted): max {max(lengths)}, mean {sum(lengths) / len(lengths):.0f}, "
            f"cutoff_len {args.cutoff_len}"
        )
    if args.write_clean:
        _write_clean(args.write_clean, specs, clean, rejected)
        print(f"wrote {total - bad} passing rows and {bad} rejected rows to {args.write_clean}")
    return 1 if bad else 0


def _absolute_images(row: dict, spec, media_dir: Path) -> dict:
    column = spec.columns["images"]
    if not row.get(column):
        return row
    images = [p if Path(p).is_absolute() else str((media_dir / p).resolve()) for p in row[column]]
    return {**row, column: images}


def _write_clean(out_dir: Path, specs, clean: dict[str, list[dict]], rejected: list[dict]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    info = {}
    for spec in specs:
        file_name = f"{spec.name}.json"
        (out_dir / file_name).write_text(
            json.dumps(clean[spec.name], ensure_ascii=False) + "\n", encoding="utf-8"
        )
        info[spec.name] = {**spec.entry, "file_name": file_name}
    (out_dir / "dataset_info.json").write_text(
        json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    with (out_dir / "rejected.jsonl").open("w", encoding="utf-8") as handle:
        for item in rejected:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")


_PROBE = """
import json, sys
from opensearch_vl.plugins.llamafactory import import_hook
report = {"hook_installed": import_hook.is_installed(), "python": sys.version.split()[0]}
try:
    import llamafactory
    report["llamafactory"] = llamafactory.__version__
    from llamafactory.data.template import TEMPLATES
    from opensearch_vl.plugins.llamafactory import TEMPLATE_NAMES
    report["registered"] = [n for n in TEMPLATE_NAMES if n in TEMPLATES]
except Exception as exc:
    report["error"] = repr(exc)
err = import_hook.last_error()
if err is not None:
    report["error"] = repr(err)
print(json.dumps(report))
"""


def run_doctor(args: argparse.Namespace) -> int:
    """Run `sft doctor`: probe a fresh interpreter (as torchrun/Ray workers start) for the registration."""
    from opensearch_vl.plugins.llamafactory import TEMPLATE_NAMES

    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise PrerequisiteError(f"the probe interpreter failed: {proc.stderr.strip()[-500:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for key, value in report.items():
        print(f"{key}: {value}")
    if report.get("registered") == list(TEMPLATE_NAMES):
        print("ok: plain `llamafactory-cli train` (and its torchrun/Ray workers) will find the templates")
        return 0
    site = Path(sys.prefix)
    print(
        "problem: the templates are not registered in a fresh interpreter.\n"
        "- hook_installed false: opensearch_vl_llamafactory.pth is missing from this environment's "
        "site-packages "
        f"({site}); reinstall with `pip install -e .` or `pip install opensearch-vl[sft]`, and do not run "
        "Python "
        "with -S. On Python >= 3.18 the .pth import line is ignored; the .start file takes over (PEP 829).\n"
        "- llamafactory missing or error set: install the supported version with `pip install "
        "'opensearch-vl[sft]'` "
        "(llamafactory==0.9.5).\n"
        "- single-process fallback without the hook: `python -m opensearch_vl.plugins.llamafactory train "
        "recipe.yaml`."
    )
    return 1
