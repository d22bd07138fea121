"""Where things are and which ROS graph to join: bundled files, installed packages, a private ROS domain.

The bundled URDFs and configs come from the installed share directory, else
the source tree.  The demo and the tests run on a ROS domain of their own
unless the user set ``ROS_DOMAIN_ID``: on a machine with a real robot on
domain 0 they must never subscribe to its ``/joint_states`` or command its
controller.
"""
import os
import sys

from ..ros.share import share_path


BUNDLED_ARMS = {
    'ik7': ('urdf/ik7.urdf.xacro', 'config/ik7.yaml'),
    'ik6': ('urdf/ik6.urdf.xacro', 'config/ik6.yaml'),
    'planar3': ('urdf/planar3.urdf', 'config/planar3.yaml'),
}


def arm_files(name):
    """(urdf path, config path) of a bundled arm."""
    if name not in BUNDLED_ARMS:
        raise ValueError(f"unknown bundled arm '{name}'; choose one of {', '.join(BUNDLED_ARMS)}")
    urdf, config = BUNDLED_ARMS[name]
    return share_path(urdf), share_path(config)


#: Private domains are picked from 1..101: domain 0 is the default every robot uses, and above 101
#: the DDS ports of a domain can collide with Linux's ephemeral ports.
PRIVATE_DOMAINS = range(1, 102)


def private_ros_domain(environ=None):
    """Ensure ``environ`` (default: this process's) has ROS_DOMAIN_ID, picking a private one if unset.

    Returns (domain id as text, True if it was picked here).  A picked domain
    also keeps discovery on this host (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST).
    """
    environ = os.environ if environ is None else environ
    if environ.get('ROS_DOMAIN_ID', '').strip():
        return environ['ROS_DOMAIN_ID'], False
    environ['ROS_DOMAIN_ID'] = str(PRIVATE_DOMAINS[os.getpid() % len(PRIVATE_DOMAINS)])
    environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    return environ['ROS_DOMAIN_ID'], True


def _rclpy_initialised():
    rclpy = sys.modules.get('rclpy')
    return rclpy is not None and rclpy.ok()


def local_ros_env(env=None):
    """Environment for child ROS processes: discovery kept on this host, on a private domain unless one is set.

    Without ``env`` (this process's environment) a private domain is also set for
    this process, so that it and its children share it; if this process has
    already joined a domain (rclpy initialised), its children join the same one.
    """
    if env is None:
        env = os.environ
        if not _rclpy_initialised():
            private_ros_domain(env)
    env = dict(env)
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env.setdefault('PYTHONUNBUFFERED', '1')
    return env


def package_available(name):
    """Whether ROS package ``name`` is installed (ament index); False where ament_index_python is missing."""
    try:
        from ament_index_python.packages import get_package_prefix, PackageNotFoundError
    except ImportError:
        return False
    try:
        get_package_prefix(name)
    except PackageNotFoundError:
        return False
    return True
