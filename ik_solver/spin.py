"""Run one node until Ctrl-C or shutdown, then tear it down cleanly (each node's ``main``)."""
import rclpy
from rclpy.executors import ExternalShutdownException


def run_node(node_class, args=None):
    rclpy.init(args=args)
    node = node_class()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
