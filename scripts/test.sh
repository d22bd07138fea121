#!/usr/bin/env bash
# Set up (idempotent), build, and run the tests under colcon test, for ROS_DISTRO (jazzy, the default, or
# kilted).  Arguments go to pytest (e.g. test/unit or test/unit/test_solver.py, -k name).
# Exits non-zero when any test fails.  The suite lives in the root package's test/ and tests ik_solver_demos
# too (from the same install space); ik_solver_demos has no tests of its own, and the pytest arguments name
# paths of the root package, so it is skipped here.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$HERE/setup.sh"
# shellcheck disable=SC1091
source "$HERE/env.sh"
cd "$IK_ROOT"
# Two pytest-xdist workers (test/conftest.py groups the tests): one runs the layers with ROS nodes (ros,
# graph, e2e) in order, the other the layers without ROS meanwhile.  IK_TEST_WORKERS=0: one process.
PARALLEL=()
if [ "${IK_TEST_WORKERS:-2}" != 0 ] && python -c 'import xdist' 2>/dev/null; then
  PARALLEL=(-n "${IK_TEST_WORKERS:-2}" --dist loadgroup)
fi
colcon --log-base "$IK_LOG" test --base-paths "$IK_ROOT" "$IK_ROOT/ik_solver_interfaces" "$IK_ROOT/ik_solver_demos" \
  --packages-skip ik_solver_demos --build-base "$IK_BUILD" --install-base "$IK_INSTALL" \
  --event-handlers console_direct+ summary+ --return-code-on-test-failure \
  --pytest-args -ra "${PARALLEL[@]}" "$@"
# colcon counts pytest's "no tests collected" (exit 5) as a pass: a selection that matches nothing must fail.
RESULT="$(colcon test-result --test-result-base "$IK_BUILD" --verbose)" || { echo "$RESULT"; exit 1; }
echo "$RESULT"
if ! grep -qE '^Summary: [1-9][0-9]* tests' <<<"$RESULT"; then
  echo "[test] no test ran (ROS_DISTRO=$IK_DISTRO, pytest arguments: $*)"
  exit 5
fi
