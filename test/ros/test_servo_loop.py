"""The servo node's loop schedule, in-process: a command to an idle servo is answered at once.

The first command of a motion is computed and published in the command's own
callback, not at the loop's next tick, and the loop then runs on from that
cycle's phase (never a second cycle less than one period after it).  Checked
against the node's own schedule (its cycle times and the thread that published),
so the assertions hold on a loaded machine; the one wall-clock bound (a command
taken by the loop thread between its ticks) has most of a long period to spare.
"""
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.msg', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100, I202
from geometry_msgs.msg import TwistStamped  # noqa: E402
from ik_solver.motion.servo import Status, TwistCommand  # noqa: E402
from ik_solver.ros.joint_states import StateError  # noqa: E402
from ik_solver.ros.servo_node import ServoNode  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

HOME = [0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0]
#: Long enough that a command landing between two ticks is told apart from one sent at a tick.
PERIOD = 0.1
#: Cycles of the loop, begun after the servo went idle and after its last publication, that show it has stopped
#: publishing: the cycle that set it idle has ended (cycles run one after the other), and an idle servo publishes
#: nothing until the next command.
QUIET_CYCLES = 3


class Recorder:
    """Stands in for the command publisher: records (monotonic time, thread, message) of each publication."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sent = []

    def publish(self, msg):
        with self.lock:
            self.sent.append((time.monotonic(), threading.get_ident(), msg))

    def count(self):
        with self.lock:
            return len(self.sent)


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(params=['thread', 'timer'])
def servo(request):
    """Start the node with each ``loop``, its publisher recorded; ``loop_thread``: where its loop ticks run."""
    from ros_fixtures import isolate_ros_domain, spinning
    isolate_ros_domain()
    rclpy.init()
    params = {'urdf_file': str(URDF_DIR / 'ik7.urdf.xacro'), 'base_link': 'base_link', 'tip_link': 'tool0',
              'publish_period': PERIOD, 'loop': request.param, 'command_in_type': 'speed_units',
              'joint_states_timeout': 10.0, 'incoming_command_timeout': 0.5}
    node = ServoNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    node._publisher = Recorder()
    with spinning(node) as spinner:
        node.loop_thread = node._loop.ident if request.param == 'thread' else spinner.ident
        yield node


def feed_home(node, count=8, interval=0.02, position=HOME):
    """Feed a run of joint states at ``position``: the servo believes readings only after a consistent run."""
    names = [f'joint{i}' for i in range(1, 8)]
    for _ in range(count):
        node.joint_states.on_message(JointState(name=names, position=list(position), velocity=[0.0] * 7))
        time.sleep(interval)


def idle(node, recorder):
    """Feed joint states and wait until the servo is idle and has stopped publishing (its halt messages sent).

    Stopped: QUIET_CYCLES cycles of its loop began after it went idle and after its last publication.  Counted
    in the node's own cycles, not seconds: a loaded host that holds up the loop holds up this wait with it.
    """
    feed_home(node)
    assert wait_for(lambda: node._servo is not None and node._servo.state is not None and node._servo.idle)
    went_idle = time.monotonic()

    def quiet():
        cycles = list(node._cycle_times)   # before the last publication: a cycle counted has published by then
        with recorder.lock:
            last = recorder.sent[-1][0] if recorder.sent else went_idle
        return sum(t > max(went_idle, last) for t in cycles) >= QUIET_CYCLES

    assert wait_for(quiet)
    assert node._servo.idle


def test_first_command_after_idle_is_published_by_the_command_itself(servo):
    recorder = servo._publisher
    loop_thread = servo.loop_thread
    for _ in range(2):   # twice: the second motion starts from idle again, after the first came to rest
        idle(servo, recorder)
        before = recorder.count()
        servo._command(TwistCommand(np.array([0.01, 0.0, 0.0, 0.0, 0.0, 0.0])))
        # published before _command returned, from the calling (callback) thread, not at a tick of the loop
        assert recorder.count() == before + 1
        kick_time, kick_thread, first = recorder.sent[before]
        assert kick_thread == threading.get_ident() != loop_thread
        assert np.isfinite(first.data).all()
        # the loop runs on from the command's cycle: its next cycle comes a period after it, not sooner
        assert wait_for(lambda: recorder.count() >= before + 3)
        times = list(servo._cycle_times)
        kick = max(t for t in times if t <= kick_time)
        after = [t for t in times if t > kick]
        assert after and after[0] - kick >= PERIOD * (1 - 1e-9), (after[0] - kick, PERIOD)
        later = recorder.sent[before + 1:before + 3]
        assert all(thread == loop_thread for _, thread, _ in later)


def test_commands_while_moving_wait_for_the_loop(servo):
    recorder = servo._publisher
    idle(servo, recorder)
    start = recorder.count()
    servo._command(TwistCommand(np.array([0.01, 0.0, 0.0, 0.0, 0.0, 0.0])))
    assert wait_for(lambda: recorder.count() >= start + 2)
    assert not servo._servo.idle
    before = recorder.count()
    servo._command(TwistCommand(np.array([0.0, 0.01, 0.0, 0.0, 0.0, 0.0])))
    # a moving servo takes the new command at its next tick (a cycle out of turn would break its fixed rate)
    assert all(thread != threading.get_ident() for _, thread, _ in recorder.sent[before:])
    assert wait_for(lambda: recorder.count() > before)
    assert recorder.sent[before][1] == servo.loop_thread


def test_a_twist_on_the_topic_wakes_the_loop_thread_between_ticks(request, servo):
    """With ``loop: thread`` the loop thread takes the commands itself (LoopInputs), and answers at once."""
    if servo.params['loop'] != 'thread':
        pytest.skip('the timer loop takes commands in the executor (the tests above)')
    recorder = servo._publisher
    client = rclpy.create_node('servo_loop_test_client')
    request.addfinalizer(client.destroy_node)
    twist = client.create_publisher(TwistStamped, '/ik_servo/delta_twist_cmds', 10)
    assert wait_for(lambda: twist.get_subscription_count() > 0)
    idle(servo, recorder)
    ticks = list(servo._cycle_times)
    while time.monotonic() < ticks[-1] + 0.5 * PERIOD:   # half a period from the loop's next tick
        time.sleep(0.001)
        ticks = list(servo._cycle_times)
    sent, before = time.monotonic(), recorder.count()
    msg = TwistStamped()
    msg.twist.linear.x = 0.01
    twist.publish(msg)
    assert wait_for(lambda: recorder.count() > before)
    kick_time, kick_thread, _ = recorder.sent[before]
    assert kick_thread == servo.loop_thread
    next_tick = ticks[-1] + PERIOD
    assert kick_time < next_tick - 0.01, ('answered at the tick, not on arrival', kick_time - sent, next_tick - sent)
    assert wait_for(lambda: recorder.count() >= before + 2)
    times = list(servo._cycle_times)
    kick = max(t for t in times if t <= kick_time)
    assert min(t for t in times if t > kick) - kick >= PERIOD * (1 - 1e-9)


@pytest.fixture
def fast_servo():
    """Start the node with its loop thread at 100 Hz (the default period), its publisher recorded."""
    from ros_fixtures import isolate_ros_domain, spinning
    isolate_ros_domain()
    rclpy.init()
    params = {'urdf_file': str(URDF_DIR / 'ik7.urdf.xacro'), 'base_link': 'base_link', 'tip_link': 'tool0',
              'publish_period': 0.01, 'loop': 'thread', 'command_in_type': 'speed_units',
              'joint_states_timeout': 10.0, 'incoming_command_timeout': 1.0}
    node = ServoNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    node._publisher = Recorder()
    with spinning(node):
        yield node


def test_a_delayed_cycle_sends_one_command_for_now_not_a_burst(fast_servo):
    """Held up 45 ms (as the OS may hold the thread), the loop does not catch up the cycles it missed.

    Each command is one period's step: sent back to back, a forward_position_controller would apply
    several periods of motion within a millisecond.  So consecutive commands stay about a period apart.
    """
    servo, period = fast_servo, 0.01
    recorder = servo._publisher
    feed_home(servo)
    assert wait_for(lambda: servo._servo is not None and servo._servo.state is not None)
    servo._command(TwistCommand(np.array([0.02, 0.0, 0.0, 0.0, 0.0, 0.0])))
    assert wait_for(lambda: recorder.count() >= 10)
    stalls = []
    for _ in range(3):
        with servo._lock:   # the loop thread cannot run its cycle meanwhile
            held = time.monotonic()
            time.sleep(0.045)
        stalls.append((held, time.monotonic()))
        time.sleep(0.1)
    with recorder.lock:
        times = [t for t, thread, _ in recorder.sent if thread == servo._loop.ident]
    for held, released in stalls:
        after = [t for t in times if t >= released - 1e-3][:5]
        gaps = np.diff([max(t for t in times if t < held)] + after)
        assert len(after) >= 3 and gaps.min() >= 0.5 * period, gaps


def test_after_a_pause_one_reading_is_not_enough_to_move_from(fast_servo):
    """A driver restarting publishes zeros: alone after a pause they halt the servo; a consistent run is believed.

    The servo rested at HOME; its joint_states paused longer than the plausibility model's pause.  One
    reading of zeros then arrives with a twist: the servo halts with the reason (the readings settle,
    and they are not where its last commands left the arm) and nothing it sends leaves HOME.  Once the
    zeros keep coming, consistently, past the time its last commands can explain, the servo believes
    them, restarts from them, and its first command lies within one period at the velocity limit of them.
    """
    servo, period = fast_servo, 0.01
    recorder = servo._publisher
    feed_home(servo)
    assert wait_for(lambda: servo._servo is not None and servo._servo.state is not None)
    time.sleep(0.4)   # joint_states pause: longer than the model's (0.25 s)
    zeros = np.zeros(7)
    feed_home(servo, count=1, position=zeros)
    before = recorder.count()
    servo._command(TwistCommand(np.array([0.02, 0.0, 0.0, 0.0, 0.0, 0.0])))
    time.sleep(0.1)
    with recorder.lock:
        sent = [np.array(m.data) for _, _, m in recorder.sent[before:]]
    assert all(np.abs(q - HOME).max() < 1e-3 for q in sent), sent
    with pytest.raises(StateError):   # settling after the pause, and not where the last commands left the arm
        servo.joint_states.state(servo._model.chain.joint_names)
    assert servo._last_status[0] in (Status.STALE_STATE, Status.INVALID)
    # Consistent zeros until they are believed: past the servo's last commands (its halt included) and a run.
    deadline = time.monotonic() + 10.0
    while True:
        feed_home(servo, count=5, position=zeros)
        try:
            servo.joint_states.state(servo._model.chain.joint_names)
            break
        except StateError:
            assert time.monotonic() < deadline, 'a consistent run of readings was never believed'
    before = recorder.count()
    servo._command(TwistCommand(np.array([0.02, 0.0, 0.0, 0.0, 0.0, 0.0])))

    def fed_and_sent():   # the zeros keep coming, as a driver's would: a stall here is no pause of theirs
        feed_home(servo, count=1, position=zeros)
        return recorder.count() > before

    assert wait_for(fed_and_sent)
    first = np.array(recorder.sent[before][2].data)
    assert np.all(np.abs(first - zeros) <= servo._model.chain.velocity_limits * period), first


def test_a_bad_xacro_argument_does_not_stop_the_servo():
    """A malformed xacro_args entry is reported, and the model loads without the arguments (as the IK node does)."""
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    try:
        params = {'urdf_file': str(URDF_DIR / 'ik7.urdf.xacro'), 'base_link': 'base_link', 'tip_link': 'tool0',
                  'xacro_args': ['not-an-argument'], 'loop': 'timer'}
        node = ServoNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        try:
            assert wait_for(lambda: node._servo is not None)
            assert node._model.chain.n == 7
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()


def test_a_unitless_component_beyond_one_is_refused_and_nothing_moves(servo):
    recorder = servo._publisher
    idle(servo, recorder)
    assert servo.set_parameters([Parameter('command_in_type', value='unitless')])[0].successful
    before = recorder.count()
    servo._command(TwistCommand(np.array([0.0, 5.0, 0.0, 0.0, 0.0, 0.0])))
    time.sleep(3 * PERIOD)
    assert recorder.count() == before and servo._servo.idle and servo._servo.command is None
    servo._command(TwistCommand(np.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])))   # within: taken
    assert wait_for(lambda: recorder.count() > before)


def in_thread(work):
    """Return what ``work()`` returns when run in a thread of its own (whose scheduling ends with it)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


def test_a_process_started_by_a_real_time_thread_gets_normal_scheduling():
    """The kernels' background compiler, started from the loop thread, must not hold a core at its priority."""
    import os
    import subprocess
    import sys
    from ik_solver.ros import spin

    def start_child():
        refused = spin.real_time(1)
        if refused:
            return refused
        probe = 'import os; print(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)'
        return subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, timeout=60).stdout

    out = in_thread(start_child)
    if not out[:1].isdigit():
        pytest.skip(f'SCHED_FIFO refused here: {out}')
    assert out.split() == [str(os.SCHED_OTHER), '0']


_THREADS_CHILD = """
import os, threading
from ik_solver.ros import spin
ready, done = threading.Event(), threading.Event()
def loop():
    refused = spin.real_time(5)
    print('loop', threading.get_native_id(), refused, flush=True)
    ready.set()
    done.wait(30)
thread = threading.Thread(target=loop)
thread.start()
ready.wait(30)
print('refused', spin.real_time_threads(2))
for tid in os.listdir('/proc/self/task'):
    print('thread', tid, os.sched_getparam(int(tid)).sched_priority)
done.set()
"""


def test_the_other_threads_go_real_time_below_a_thread_already_above_them():
    """real_time_threads raises every thread of the process to its priority and lowers none (the loop's)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, '-c', _THREADS_CHILD], capture_output=True, text=True, timeout=60)
    lines = [line.split() for line in out.stdout.splitlines()]
    loop = next(line for line in lines if line[0] == 'loop')
    if loop[2] != 'None':
        pytest.skip(f'SCHED_FIFO refused here: {out.stdout}')
    assert ['refused', 'None'] in lines, out.stdout + out.stderr
    priorities = {tid: int(p) for kind, tid, p in (line for line in lines if line[0] == 'thread')}
    assert priorities.pop(loop[1]) == 5
    assert priorities and set(priorities.values()) == {2}
