"""ros.spin: a node's start-up objects are out of the garbage collector's reach once it runs."""
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

_CHILD = textwrap.dedent("""
    import gc, os, signal
    from rclpy.node import Node
    from ik_solver.ros.spin import run_node

    def make_node():
        node = Node('heap_probe')
        keep = [dict(k=k) for k in range(20000)]   # long-lived start-up objects, as a model's

        def report():
            print('frozen', gc.get_freeze_count(), 'kept', len(keep), flush=True)
            os.kill(os.getpid(), signal.SIGINT)
        node.create_timer(0.05, report)
        return node
    run_node(make_node)
""")


def test_objects_made_at_start_up_are_frozen_before_the_node_spins():
    """A full collection held the simulator 40-90 ms per scan of its start-up objects; frozen, it skips them."""
    out = subprocess.run([sys.executable, '-c', _CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    frozen = int(out.stdout.split('frozen', 1)[1].split()[0])
    assert frozen > 20000
