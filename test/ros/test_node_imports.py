"""A node process imports what it runs: message type support without the ROS code generator."""
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Create a publisher (it loads the message's type support), then report the generator's modules.
_CHILD = """
import sys
import ik_solver.ros
import rclpy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('type_support_probe')
node.create_publisher(String, 'probe', 1)
print(sorted(m for m in ('lark', 'rosidl_parser.parser', 'rosidl_generator_py.generate_py_impl') if m in sys.modules))
import rosidl_generator_py.generate_py_impl as generator
print(callable(generator.generate_py))
node.destroy_node()
rclpy.try_shutdown()
"""


def test_message_type_support_loads_without_the_code_generator():
    """The IDL parser (lark) stays out of a node; whoever asks for the generator afterwards still gets it."""
    from ros_fixtures import suite_domain
    env = dict(os.environ, ROS_DOMAIN_ID=suite_domain(), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-c', _CHILD], env=env, capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    loaded, generator = done.stdout.split('\n')[:2]
    assert loaded == '[]'
    assert generator == 'True'
