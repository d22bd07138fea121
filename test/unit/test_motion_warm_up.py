"""``motion.warmup`` (what the set-up runs; nodes run ``guard.warm_up``) loads every type their moves pass.

A kernel type it leaves out is compiled, or run interpreted while a background process compiles it, at a
node's first moves: a stream then lags by milliseconds per target.  The simulated arm's controller
(``sim.controllers``) runs the same spline kernels on what it receives.
"""
from conftest import printed_by_kernel_process

#: In a fresh process that compiles what the cache lacks: the motion kernels' types after the warm-up, then after
#: the moves a node sends (a move from rest, moves that continue the command under way while the arm follows it,
#: the replay the joint states are judged against, a move from rest after the arm stopped), each written as CDR
#: and run by the simulated controller.
CHECK = """
import inspect
from numba.core.registry import CPUDispatcher
import numpy as np
from ik_solver.motion import guard, jtc, timing, trajectory_cdr, warmup
from ik_solver.motion.command_history import CommandHistory
from ik_solver.motion.commander import Commander, CommanderSettings, StateSources
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver_demos.sim.controllers import LimitMonitor, TrajectoryController

kernels = [k for m in (guard, jtc, timing, trajectory_cdr) for _, k in inspect.getmembers(m)
           if isinstance(k, CPUDispatcher)]
def types():
    return [sorted(map(str, k.signatures)) for k in kernels]
warmup.warm_up()
warm = types()

class Clock:
    t = 100.0
    def __call__(self):
        return self.t
clock, n = Clock(), 7
limits = JointLimits(tuple(f'j{i}' for i in range(n)), np.full(n, -3.0), np.full(n, 3.0), np.full(n, 1.0),
                     np.full(n, 4.0), np.full(n, 60.0))
history = CommandHistory(clock)
arm = {'q': MotionState.at_rest(np.zeros(n))}
def measured():
    reference = history.reference()
    state = arm['q'] if reference is None else reference
    return MotionState(state.position, state.velocity, state.acceleration, clock())
sent = []
controller = TrajectoryController(np.zeros(n), LimitMonitor(limits, 0.01))
def transport(names, path, t0):
    sent.append(trajectory_cdr.trajectory_cdr(names, path, (int(t0), 0)))
    points = list(zip(path.times, path.positions, path.velocities, path.accelerations, [()] * len(path.times)))
    controller.load(jtc.reorder(list(names), points, list(names)), t0, str(len(sent)), clock())   # as received
commander = Commander(CommanderSettings(tuple(limits.names), limits, lead_time=0.05), StateSources(measured),
                      transport, history, clock)
for k in range(6):
    start = commander.start_state()
    commander.seed(start, lambda Q: np.zeros((len(Q), 2)))
    result = commander.move(np.full(n, 0.1 * (k + 1)))
    assert result.sent, result.message
    history.expectation(clock(), limits.velocity, 1.0)
    for _ in range(10):
        controller.update(clock(), 0.001)
        clock.t += 0.001
for _ in range(400):   # to rest, then a move from rest: the controller joins it from its own last command
    controller.update(clock(), 0.01)
    clock.t += 0.01
assert commander.move(np.zeros(n)).sent
for _ in range(10):
    controller.update(clock(), 0.001)
    clock.t += 0.001
print(warm == types(), len(sent))
"""


def test_the_warm_up_loads_every_type_a_node_s_moves_pass():
    assert printed_by_kernel_process(CHECK) == ['True', '7']
