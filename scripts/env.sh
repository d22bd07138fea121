# Source this to use the built workspace of one distribution (ROS_DISTRO=jazzy, the default, or kilted):
# the venv, the wheels' prefix and the install space.
case $- in *u*) _IK_NOUNSET=1; set +u ;; *) _IK_NOUNSET= ;; esac  # colcon's setup files read unset variables
# shellcheck disable=SC1091
if source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"; then
  source "$IK_VENV/bin/activate"
  export ROS_DISTRO="$IK_DISTRO"
  export AMENT_PREFIX_PATH="$IK_VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
  export CMAKE_PREFIX_PATH="$IK_VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  [ -f "$IK_INSTALL/setup.bash" ] && source "$IK_INSTALL/setup.bash"
fi
[ -n "$_IK_NOUNSET" ] && set -u
unset _IK_NOUNSET
