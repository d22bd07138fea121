#!/usr/bin/env bash
# Set up (idempotent), build, and run the tests of both packages under colcon test, for ROS_DISTRO
# (jazzy, the default, or kilted).  Arguments go to pytest (e.g. test/unit or test/unit/test_solver.py, -k name).
# Exits non-zero when any test fails.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$HERE/setup.sh"
# shellcheck disable=SC1091
source "$HERE/env.sh"
cd "$IK_ROOT"
colcon --log-base "$IK_LOG" test --base-paths "$IK_ROOT" "$IK_ROOT/ik_solver_interfaces" \
  --build-base "$IK_BUILD" --install-base "$IK_INSTALL" \
  --event-handlers console_direct+ summary+ --return-code-on-test-failure \
  --pytest-args -ra "$@"
# colcon counts pytest's "no tests collected" (exit 5) as a pass: a selection that matches nothing must fail.
RESULT="$(colcon test-result --test-result-base "$IK_BUILD" --verbose)" || { echo "$RESULT"; exit 1; }
echo "$RESULT"
if ! grep -qE '^Summary: [1-9][0-9]* tests' <<<"$RESULT"; then
  echo "[test] no test ran (ROS_DISTRO=$IK_DISTRO, pytest arguments: $*)"
  exit 5
fi
