"""Console entry point of the simulated arm: a stop signal during its imports ends the process quietly."""
from ik_solver.ros.entry import run


def sim_arm_node():
    """Run ``sim_arm_node`` (as ``ik_solver.ros.entry`` runs the runtime's nodes)."""
    return run('ik_solver_demos.sim.sim_arm_node')
