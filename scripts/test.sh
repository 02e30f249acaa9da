#!/usr/bin/env bash
# Set up the environment (scripts/setup.sh) and run the whole test suite. Extra arguments go to pytest.
#   bash scripts/test.sh                 # everything, as CI runs it
#   bash scripts/test.sh tests/tools_env # one folder
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. "${VENV:-.venv}/bin/activate"
status=0
python -m pytest -p no:cacheprovider -q "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating that as a failure" >&2
fi
exit "$status"
