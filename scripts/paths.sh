# Sourced by setup.sh, env.sh and test.sh: the ROS 2 distribution and its folders.
# ROS_DISTRO picks the distribution (jazzy, the LTS, when unset); each one has its own venv, build,
# install and log folders, so the two never mix.
IK_DISTRO="${ROS_DISTRO:-jazzy}"
case "$IK_DISTRO" in
  jazzy|kilted) ;;
  *) echo "[ik_solver] ROS_DISTRO=$IK_DISTRO is not supported here: use jazzy (default) or kilted" >&2
     return 1 2>/dev/null || exit 1 ;;
esac
IK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IK_VENV="${IK_SOLVER_VENV:-$IK_ROOT/.venv-$IK_DISTRO}"
IK_BUILD="$IK_ROOT/build/$IK_DISTRO"
IK_INSTALL="$IK_ROOT/install/$IK_DISTRO"
IK_LOG="$IK_ROOT/log/$IK_DISTRO"
