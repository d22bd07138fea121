#!/usr/bin/env bash
# Set up (idempotent), build, and run every test of both packages under colcon test.
# Exits non-zero when any test fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/env.sh"
cd "$ROOT"
colcon --log-base "$ROOT/log" test --base-paths "$ROOT" "$ROOT/ik_solver_interfaces" \
  --build-base "$ROOT/build" --install-base "$ROOT/install" \
  --event-handlers console_direct+ summary+ --return-code-on-test-failure \
  --pytest-args -ra "$@"
colcon test-result --test-result-base "$ROOT/build" --verbose
