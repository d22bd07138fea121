# Source this to use the built workspace: the venv, the wheels' prefix, the install space.
_IK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_IK_VENV="${IK_SOLVER_VENV:-$_IK_ROOT/.venv}"
case $- in *u*) _IK_NOUNSET=1; set +u ;; *) _IK_NOUNSET= ;; esac  # colcon's setup files read unset variables
source "$_IK_VENV/bin/activate"
export AMENT_PREFIX_PATH="$_IK_VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$_IK_VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
# shellcheck disable=SC1091
[ -f "$_IK_ROOT/install/setup.bash" ] && source "$_IK_ROOT/install/setup.bash"
[ -n "$_IK_NOUNSET" ] && set -u
unset _IK_ROOT _IK_VENV _IK_NOUNSET
