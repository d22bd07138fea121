"""Run one node until Ctrl-C or shutdown, then tear it down cleanly (each node's ``main``)."""
import rclpy
from rclpy.executors import ExternalShutdownException


def run_node(make_node, args=None):
    rclpy.init(args=args)
    node = make_node()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
