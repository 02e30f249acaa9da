"""The estimators resolve in fresh processes: via the installed entry point, via VERL_USE_EXTERNAL_MODULES,
and inside a Ray actor (where verl's TaskRunner and workers run)."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytest.importorskip("verl")

LOOKUP = (
    "import json, verl\nfrom verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as R\n"
    "print(json.dumps({n: (R[n].__module__ if n in R else None) for n in ('fatal_grpo', 'fatal_rloo')}))"
)
OURS = "opensearch_vl.plugins.verl.estimators"


def _env(**overrides):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_USE_EXTERNAL")}
    env.update(overrides)
    return env


@pytest.mark.slow
def test_entry_point_and_external_modules_routes_in_fresh_processes():
    routes = {
        "entry_point": _env(),
        "external_modules": _env(
            VERL_USE_EXTERNAL_PLUGINS="none", VERL_USE_EXTERNAL_MODULES="opensearch_vl.plugins.verl"
        ),
        "neither": _env(VERL_USE_EXTERNAL_PLUGINS="none"),  # control: proves the lookup can fail
    }
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", LOOKUP], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, env in routes.items()
    }
    seen = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-2000:]
        seen[name] = json.loads(out.strip().splitlines()[-1])
    assert seen["entry_point"] == {"fatal_grpo": OURS, "fatal_rloo": OURS}
    assert seen["external_modules"] == {"fatal_grpo": OURS, "fatal_rloo": OURS}
    assert seen["neither"] == {"fatal_grpo": None, "fatal_rloo": None}


ACTOR_SCRIPT = textwrap.dedent("""
    import json, ray
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)

    @ray.remote(num_cpus=1)
    class Runner:  # stands in for verl's TaskRunner: it imports verl's trainer only, never opensearch_vl
        def run(self):
            import numpy as np, torch
            from verl import DataProto
            from verl.trainer.ppo.core_algos import get_adv_estimator_fn
            from verl.trainer.ppo.ray_trainer import compute_advantage
            fn = get_adv_estimator_fn("fatal_grpo")
            rewards = torch.zeros(4, 3)
            rewards[:, -1] = torch.tensor([1.0, 0.0, 0.0, 1.0])
            data = DataProto.from_dict(
                tensors={"token_level_rewards": rewards, "response_mask": torch.ones(4, 3)},
                non_tensors={"uid": np.array(["q"] * 4, dtype=object),
                             "is_fatal": np.array([False, True, False, False])})
            out = compute_advantage(data, adv_estimator="fatal_grpo", config={})
            return {"module": fn.__module__, "row": out.batch["advantages"][:, 0].tolist()}

    print("RESULT " + json.dumps(ray.get(Runner.remote().run.remote())))
    ray.shutdown()
""")


@pytest.mark.slow
def test_estimator_resolves_and_runs_inside_a_ray_actor():
    pytest.importorskip("ray")
    with tempfile.TemporaryDirectory(
        prefix="ray", dir="/tmp"
    ) as short:  # AF_UNIX paths must stay < 108 bytes
        env = _env(RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=short)
        proc = subprocess.run(
            [sys.executable, "-c", ACTOR_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=short,
        )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert result["module"] == OURS
    assert result["row"] == pytest.approx([1.0, 0.0, -1.0, 1.0], abs=1e-5)  # the fatal −1 clamped to 0
