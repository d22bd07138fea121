"""Where things are and which ROS graph to join: the bundled arms' files, a private ROS domain.

The bundled URDFs and configs come from the installed share directory, else
the source tree.  The demo and the tests run on a ROS domain of their own
unless the user set ``ROS_DOMAIN_ID``: on a machine with a real robot on
domain 0 they must never subscribe to its ``/joint_states`` or command its
controller.
"""
import os
import sys

from ik_solver.ros.launch_setup import BUNDLED_ARMS
from ik_solver.ros.share import share_path


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
