#!/usr/bin/env bash
# Set up (idempotent), then run the end-to-end demo on the bundled 7-DoF arm in MuJoCo
# and draw the method comparison. Figures go to demo_output/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
set +u  # colcon's setup files read unset variables
# shellcheck disable=SC1091
source "$ROOT/scripts/env.sh"
set -u
cd "$ROOT"
python -m ik_solver.compare_methods --output-dir demo_output
exec python -m ik_solver.demo --output-dir demo_output "$@"
