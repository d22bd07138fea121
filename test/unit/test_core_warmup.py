"""``core.warmup``: what the set-up compiles covers what a node reads of every result, so its start compiles nothing."""
from conftest import printed_by_kernel_process

#: In a process that compiles what the cache lacks: the types of the kernels a node runs on each result, to seed
#: each target and on a target in a robot link after the set-up's first step, then after what a node loads at start
#: (``load``), seeds with, reads of a result and resolves in a link, on a real arm.
CHECK = """
from ik_solver.core import attempt, kinematics, nullspace, transforms, warmup
from ik_solver.core.chain import load_chain
from ik_solver.core.frames import RobotFrames
from ik_solver.core.solver import IKSolver, SolverOptions
from ik_solver.core.urdf import parse_robot
import numpy as np
kernels = (attempt.exact_sigma, nullspace.manipulability, kinematics._rotate_about, transforms._pose_errors)
warmup.default_solve()
warm = [sorted(map(str, k.signatures)) for k in kernels]
warmup.load(SolverOptions(), False)
chain = load_chain('urdf/ik7.urdf.xacro', 'base_link', 'tool0')
q = chain.mid_configuration()
result = IKSolver(chain).solve(chain.fk(q), q)
transforms.pose_errors(chain.fk(q), chain.fk_batch(np.stack([q, result.joints])))
result.sigma_min, nullspace.manipulability(chain.jacobian(result.joints))
RobotFrames(parse_robot('urdf/ik7.urdf.xacro'), 'base_link').pose('link4', dict(zip(chain.joint_names, q)))
print(warm == [sorted(map(str, k.signatures)) for k in kernels], all(warm))
"""


def test_the_first_step_loads_what_a_node_seeds_with_reads_of_a_result_and_resolves_in_a_link():
    assert printed_by_kernel_process(CHECK) == ['True', 'True']
