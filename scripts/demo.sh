#!/usr/bin/env bash
# Set up (idempotent), then run the end-to-end demo on the bundled 7-DoF arm in MuJoCo
# and draw the method comparison. Figures go to demo_output/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/env.sh"
cd "$ROOT"
python -m ik_solver_demos.tools.compare_methods --output-dir demo_output
exec python -m ik_solver_demos.tools.demo --output-dir demo_output "$@"
