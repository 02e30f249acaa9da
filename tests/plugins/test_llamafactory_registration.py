"""The `.pth` import hook registers our templates in every fresh interpreter that imports LLaMA-Factory
(plain CLI, torchrun workers, Ray workers), costs nothing elsewhere, and survives regular and editable
installs.
(The torchrun path is exercised by a real training run in tests/sft/test_sft_training.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NAMES = ["qwen3_vl_agentic_nothink", "qwen3_vl_agentic", "qwen2_vl_agentic"]


def run_python(code: str, python: str = sys.executable, timeout: int = 240) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FORCE_TORCHRUN", "USE_RAY")}
    proc = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=timeout, env=env, cwd="/"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


PROBE = """
import json, sys
before = sorted(m for m in ("torch", "llamafactory", "transformers") if m in sys.modules)
hook = any(type(f).__name__ == "LlamaFactoryTemplateFinder" for f in sys.meta_path)
import llamafactory.data
from llamafactory.data.template import TEMPLATES
import opensearch_vl
print(json.dumps({"before": before, "hook": hook, "names": [n for n in TEMPLATES if "agentic" in n],
                  "wrapped": getattr(llamafactory.data.get_template_and_fix_tokenizer, "_opensearch_vl",
                  False),
                  "package": opensearch_vl.__file__}))
"""


def test_fresh_interpreter_registers_lazily():
    report = run_python(PROBE)
    assert report["before"] == []
    assert report["hook"] is True
    assert report["names"] == NAMES
    assert report["wrapped"] is True


def test_start_up_cost_is_only_the_hook_module():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True, check=True
    )
    ours = [line for line in proc.stderr.splitlines() if "opensearch_vl" in line]
    assert ours, "the .pth hook did not run at start-up"
    cumulative_us = max(int(line.split("|")[1]) for line in ours)
    assert cumulative_us < 50_000, ours
    heavy = [
        line
        for line in proc.stderr.splitlines()
        if line.rstrip().endswith((" torch", " llamafactory", " transformers"))
    ]
    assert heavy == []


def test_registers_when_llamafactory_was_imported_before_the_hook():
    code = """
import json, sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "LlamaFactoryTemplateFinder"]
import llamafactory.data
from llamafactory.data.template import TEMPLATES
assert "qwen3_vl_agentic_nothink" not in TEMPLATES
from opensearch_vl.plugins.llamafactory import import_hook
import_hook.install()
print(json.dumps({"names": [n for n in TEMPLATES if "agentic" in n],
                  "wrapped": getattr(llamafactory.data.get_template_and_fix_tokenizer, "_opensearch_vl",
                  False)}))
"""
    report = run_python(code)
    assert report == {"names": NAMES, "wrapped": True}


def test_failed_registration_explains_itself_instead_of_template_does_not_exist():
    code = """
import json, sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "LlamaFactoryTemplateFinder"]
import llamafactory.data.template as module
from llamafactory.hparams import DataArguments
from opensearch_vl.plugins.llamafactory import import_hook
import_hook._explain_on_lookup(module, RuntimeError("llamafactory API changed"))
try:
    module.get_template_and_fix_tokenizer(None, DataArguments(template="qwen3_vl_agentic_nothink"))
except Exception as exc:
    print(json.dumps({"type": type(exc).__name__, "message": str(exc)}))
"""
    report = run_python(code)
    assert report["type"] == "PrerequisiteError"
    assert "registration failed" in report["message"] and "llamafactory API changed" in report["message"]
    assert "opensearch-vl sft doctor" in report["message"]


def test_doctor_reports_active_registration():
    proc = subprocess.run(
        [sys.executable, "-m", "opensearch_vl.cli.main", "sft", "doctor"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "registered: ['qwen3_vl_agentic_nothink', 'qwen3_vl_agentic', 'qwen2_vl_agentic']" in proc.stdout


@pytest.mark.slow
def test_ray_workers_register_the_templates():
    code = """
import json, os, ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
@ray.remote
def probe():
    import os, sys
    import llamafactory.data.template as t
    hook = any(type(f).__name__ == "LlamaFactoryTemplateFinder" for f in sys.meta_path)
    return os.getpid(), hook, [n for n in t.TEMPLATES if "agentic" in n]
pid, hook, names = ray.get(probe.remote())
ray.shutdown()
print(json.dumps({"same_process": pid == os.getpid(), "hook": hook, "names": names}))
"""
    report = run_python(code, timeout=300)
    assert report == {"same_process": False, "hook": True, "names": NAMES}


def _repo_copy(tmp_path: Path) -> Path:
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "runs", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"
    )
    return Path(shutil.copytree(REPO, tmp_path / "src", ignore=ignore))


def _venv_inheriting_this_one(tmp_path: Path) -> tuple[str, Path]:
    """A fresh venv whose sys.path also sees this environment's site-packages (fast: no dependency installs).
    A plain path line adds the folder without running its .pth files, so only the new install's hook is
    active."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "_inherit_parent_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["regular", "editable"])
def test_pip_install_ships_the_hook(tmp_path, editable):
    src = _repo_copy(tmp_path)
    python, site = _venv_inheriting_this_one(tmp_path)
    target = ["-e", str(src)] if editable else [str(src)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            *target,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (site / "opensearch_vl_llamafactory.pth").exists()
    assert (
        site / "opensearch_vl_llamafactory.start"
    ).read_text().strip() == "opensearch_vl.plugins.llamafactory.import_hook:install"
    report = run_python(PROBE, python=python)
    assert report["names"] == NAMES and report["before"] == []
    expected_root = src if editable else site
    assert Path(report["package"]).resolve().is_relative_to(expected_root.resolve())


def test_hook_is_silent_where_the_package_cannot_be_imported(tmp_path):
    """A sandbox or a moved checkout hides an editable install's source: the .pth must not print errors."""
    import shutil
    import subprocess
    import sys

    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "plugins/llamafactory/site/opensearch_vl_llamafactory.pth"
    shutil.copy(shipped, site_dir)
    # -S: no site-packages, so no editable finder either; opensearch_vl is not importable in this process
    code = (
        "import site, sys; site.addsitedir(sys.argv[1]); "
        "print([type(f).__name__ for f in sys.meta_path if 'Template' in type(f).__name__])"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code, str(site_dir)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0 and result.stderr == "" and result.stdout.strip() == "[]"
