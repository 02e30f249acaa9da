#!/usr/bin/env bash
# Create .venv (or $VENV) and install this project with everything the tests and the demo use:
# the offline tools, local OCR, LLaMA-Factory 0.9.5 and verl 0.9.1 on a CPU-only machine.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
export PIP_DISABLE_PIP_VERSION_CHECK=1
python -m pip install -q --upgrade pip "setuptools>=69" wheel

# torch first, from PyPI's default build: a CPU-only torch wheel pairs with no torchvision/torchaudio that
# imports, and LLaMA-Factory needs both (see README, "CPU machines"). Machines whose pip configuration adds a
# find-links folder of CPU wheels (PIP_FIND_LINKS or pip.conf) would hand us that build, so pip's
# configuration is bypassed for this one step.
if ! python -c "import torch, torchvision.ops, torchaudio" >/dev/null 2>&1; then
  python -m pip uninstall -q -y torch torchvision torchaudio >/dev/null 2>&1 || true
  PIP_CONFIG_FILE=/dev/null env -u PIP_FIND_LINKS python -m pip install -q \
    torch==2.13.0 torchvision==0.28.0 torchaudio==2.11.0
  python -c "import torch, torchvision.ops, torchaudio" || { echo "torch/torchvision do not import" >&2; exit 1; }
fi
TORCH_PIN=$(python -c "import torch; print(torch.__version__.split('+')[0])")
echo "torch==$TORCH_PIN" > "$VENV/constraints.txt"

env -u PIP_FIND_LINKS python -m pip install -q -c "$VENV/constraints.txt" -e ".[dev,ocr,sft,rl]"
python -m pip check || echo "warning: pip check reported conflicts (see above)" >&2
echo "ready: . $VENV/bin/activate"
