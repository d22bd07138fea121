"""SIGINT, SIGTERM or SIGHUP to a whole process group ends every node (and the demo) with exit 0, no traceback.

Real processes: the demo's two nodes (sim_arm_node and ik_solver_node) are
started in one new process group, as a launch or a CI runner would, and the
signal goes to the group twice, as a process group with ``ros2 launch`` in it
gets it (once from the sender, once forwarded by launch).  One group per signal,
each in its own namespace, and one demo per signal, each on its own domain, run
side by side: each is signalled on its own, so their start-ups overlap.  Also the
signal handler itself, in-process.
"""
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

from ik_solver.ros.spin import ShutdownRequested, ShutdownSignals
import pytest

ros_fixtures = pytest.importorskip('ros_fixtures', reason='rclpy or ik_solver_interfaces missing')
from ik_solver.core.chain import load_chain  # noqa: E402, I100
from ik_solver_demos.tools.launcher import module_name, node_args  # noqa: E402
from ik_solver_demos.tools.observer import ArmObserver  # noqa: E402
from ik_solver_demos.tools.resources import arm_files, local_ros_env  # noqa: E402

NODES = ('sim.sim_arm_node', 'ros.ik_node')
#: The signals sent to a process group of the two nodes, and to the demo's (one group, or one demo, each, at once).
GROUP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DEMO_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def start_group(logs, namespace):
    """Start both nodes in ``namespace`` in one new process group (the first one leads it); return the Popens."""
    urdf, config = arm_files('ik7')
    processes = []
    for module in NODES:
        cmd = [sys.executable, '-m', module_name(module), '--ros-args',
               *node_args(config, {'urdf_file': urdf, **({'kinematic': True} if 'sim' in module else {})}),
               '-r', f'__ns:={namespace}']
        log = open(os.path.join(logs, module + '.log'), 'w')
        group = {'process_group': 0} if not processes else {'process_group': processes[0].pid}
        processes.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=local_ros_env(), **group))
    return processes


def signal_group(leader, signum):
    """Send ``signum`` to the group of ``leader`` twice, as a group with ``ros2 launch`` in it gets it."""
    os.killpg(leader, signum)
    time.sleep(0.05)  # ros2 launch, in the same group, forwards the signal to its children once more
    os.killpg(leader, signum)


def exit_code(process, timeout):
    """Return the exit code of ``process`` once it ends, None if it is still running after ``timeout`` [s]."""
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture(scope='module')
def group_runs():
    """Run one process group of both nodes per signal, all at once, each in its own namespace, and signal each.

    The groups are independent (their own namespaces, observers and signals): run side by side, their start-ups
    overlap.  Returns {signal: (exit codes of the two nodes, {node module: its output})}.
    """
    ros_fixtures.isolate_ros_domain()
    ros_fixtures.rclpy.init()
    urdf, _ = arm_files('ik7')
    names = load_chain(urdf, 'base_link', 'tool0').joint_names
    runs, observers = {}, []
    try:
        for signum in GROUP_SIGNALS:
            namespace = f'/signal_{int(signum)}'
            observers.append(ArmObserver(names, namespace=namespace))
            logs = tempfile.mkdtemp(prefix='ik_signals_')
            runs[signum] = (logs, start_group(logs, namespace))
        for observer, (logs, _) in zip(observers, runs.values()):
            assert observer.wait_ready(90.0), 'nodes did not come up; logs in ' + logs
        time.sleep(0.5)
        for signum, (_, processes) in runs.items():
            signal_group(processes[0].pid, signum)
        codes = {signum: [exit_code(p, 20.0) for p in processes] for signum, (_, processes) in runs.items()}
    finally:
        for _, processes in runs.values():
            for p in processes:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for observer in observers:
            observer.close()
        ros_fixtures.rclpy.try_shutdown()
    return {signum: (codes[signum], {m: open(os.path.join(logs, m + '.log')).read() for m in NODES})
            for signum, (logs, _) in runs.items()}


@pytest.mark.parametrize('signum', GROUP_SIGNALS)
def test_signal_to_the_process_group_ends_every_node_cleanly(group_runs, signum):
    codes, outputs = group_runs[signum]
    assert codes == [0, 0], outputs
    for module, text in outputs.items():
        assert 'Traceback' not in text, text
        assert 'KeyboardInterrupt' not in text, text


def processes_on_domain(domain):
    """Pids of this package's processes whose environment has ROS_DOMAIN_ID=domain (read from /proc)."""
    found = []
    for proc in pathlib.Path('/proc').iterdir():
        try:
            environ = (proc / 'environ').read_bytes().split(b'\0')
            cmdline = (proc / 'cmdline').read_bytes()
        except (OSError, ValueError):
            continue
        if f'ROS_DOMAIN_ID={domain}'.encode() in environ and b'ik_solver' in cmdline:
            found.append(int(proc.name))
    return found


@pytest.fixture(scope='module')
def demo_runs(tmp_path_factory):
    """Run one demo per signal, at once, each on its own domain; signal each once it sends targets.

    Returns:
        {signal: (the demo's exit code or None, its output, its domain)}.
    """
    runs = {}
    try:
        for signum in DEMO_SIGNALS:
            folder = tmp_path_factory.mktemp(f'demo_{int(signum)}')
            domain = str(150 + os.getpid() % 50 + signum)
            env = local_ros_env({**os.environ, 'ROS_DOMAIN_ID': domain})
            log = open(folder / 'demo.log', 'w')
            demo = subprocess.Popen([sys.executable, '-m', 'ik_solver_demos.tools.demo', '--kinematic',
                                     '--output-dir', str(folder)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                    process_group=0)
            runs[signum] = (demo, folder / 'demo.log', domain)
        waiting, deadline = set(runs), time.monotonic() + 120.0
        while waiting and time.monotonic() < deadline:
            for signum in list(waiting):
                demo, log, _ = runs[signum]
                if 'sending targets' in log.read_text():
                    signal_group(demo.pid, signum)
                    waiting.discard(signum)
                elif demo.poll() is not None:   # ended before it sent targets: its test shows the output
                    waiting.discard(signum)
            time.sleep(0.2)
        codes = {signum: exit_code(demo, 30.0) for signum, (demo, _, _) in runs.items()}
    finally:
        for demo, _, _ in runs.values():
            if demo.poll() is None:
                demo.kill()
    return {signum: (codes[signum], log.read_text(), domain) for signum, (_, log, domain) in runs.items()}


@pytest.mark.parametrize('signum', DEMO_SIGNALS)
def test_demo_stops_its_nodes_and_exits_0_on_a_group_signal(demo_runs, signum):
    code, output, domain = demo_runs[signum]
    assert 'sending targets' in output, output
    assert code == 0 and 'Traceback' not in output, output
    assert 'stopping the nodes' in output
    gone = poll_until(lambda: not processes_on_domain(domain), 10.0)
    left = processes_on_domain(domain)
    for pid in left:  # a rerun (same domain) must start clean
        os.kill(pid, signal.SIGKILL)
    assert gone, left


def poll_until(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.1)
    return predicate()


def test_first_signal_requests_shutdown_later_ones_are_ignored():
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        signals = ShutdownSignals(raising=True)
        with pytest.raises(ShutdownRequested) as raised:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)  # the handler runs in this thread between bytecodes
        assert raised.value.code == 0 and raised.value.signum == signal.SIGTERM
        os.kill(os.getpid(), signal.SIGINT)  # ignored: no KeyboardInterrupt, no second exception
        time.sleep(0.1)
        assert signals.requested and signals.event.is_set() and signals.signum == signal.SIGTERM

        # a second signal whose Python handler runs late (it arrived before SIG_IGN was set) is a no-op:
        # raised inside the cleanup, it would skip it (the demo then left its nodes running)
        signals._handle(signal.SIGTERM, None)
        assert signals.signum == signal.SIGTERM

        quiet = ShutdownSignals(raising=False)
        os.kill(os.getpid(), signal.SIGHUP)
        assert quiet.event.wait(2.0) and quiet.signum == signal.SIGHUP
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


SWALLOWED = """
import ctypes, os, signal, sys, time
from ik_solver.ros.spin import ShutdownSignals
signals = ShutdownSignals(raising=True, exit_after=0.5)
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

def compare(a, b):  # stands in for numba's cache callback: the signal's exception is raised in here
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)
    return 0

array = (ctypes.c_int * 2)(1, 2)
ctypes.CDLL(None).qsort(array, 2, ctypes.sizeof(ctypes.c_int), CALLBACK(compare))
print('start-up went on', signals.requested, flush=True)
time.sleep(10.0)  # a long start-up: the deadline ends it
print('not ended', flush=True)
sys.exit(3)
"""


def test_a_stop_request_swallowed_during_start_up_still_ends_the_process_with_0():
    """Python drops an exception raised inside a ctypes callback; the start-up deadline ends the process anyway."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, '-c', SWALLOWED], capture_output=True, text=True, timeout=30.0,
                          cwd=pathlib.Path(__file__).resolve().parents[2])
    assert 'start-up went on True' in done.stdout  # the exception was indeed swallowed
    assert done.returncode == 0 and 'not ended' not in done.stdout, (done.returncode, done.stdout, done.stderr)
    assert time.monotonic() - started < 8.0


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_during_a_nodes_imports_ends_it_with_0_and_no_traceback(tmp_path, signum):
    """The console entry points (ros.entry) answer a signal that lands while the node module is still importing.

    Deterministic: the imported module signals its own process halfway through
    its import.  Without the entry point's handlers the same module dies with a
    KeyboardInterrupt traceback (SIGINT) or the signal's exit code (checked as a control).
    """
    (tmp_path / 'slow_node.py').write_text(
        'import os, signal, time\n'
        f'os.kill(os.getpid(), {int(signum)})\n'
        'time.sleep(2.0)\n'
        'def main():\n'
        '    print("main ran")\n')
    env = {**os.environ, 'PYTHONPATH': f'{tmp_path}{os.pathsep}{os.environ.get("PYTHONPATH", "")}'}
    entry = subprocess.run([sys.executable, '-c', 'from ik_solver.ros.entry import run; run("slow_node")'],
                           capture_output=True, text=True, env=env, timeout=60, cwd=pathlib.Path(__file__).parents[2])
    assert entry.returncode == 0 and 'Traceback' not in entry.stderr and 'main ran' not in entry.stdout, entry
    # a child inherits ignored and blocked signals (a background job of a script ignores SIGINT; a CI runner may
    # ignore or block SIGTERM): the control restores what an interactive start has, so the signal can land
    default = 'signal.default_int_handler' if signum == signal.SIGINT else 'signal.SIG_DFL'
    control = (f'import signal; signal.pthread_sigmask(signal.SIG_UNBLOCK, {{{int(signum)}}}); '
               f'signal.signal({int(signum)}, {default}); import slow_node')
    plain = subprocess.run([sys.executable, '-c', control], capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode != 0   # the control: the signal does land during the import


LOST_IN_A_LOOP = """
import ctypes, os, signal, sys, time
from ik_solver.ros.spin import ShutdownRequested, ShutdownSignals
signals = ShutdownSignals(raising=True)   # a script's main loop (the demo): no exit deadline
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

def compare(a, b):  # numba's cache callback: the signal's exception is raised in here, printed and lost
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)
    return 0

try:
    for step in range(3):
        signals.check()   # the loop's checkpoint
        if step == 0:
            array = (ctypes.c_int * 2)(1, 2)
            ctypes.CDLL(None).qsort(array, 2, ctypes.sizeof(ctypes.c_int), CALLBACK(compare))
        print('step', step, flush=True)
except ShutdownRequested as stop:
    print('stopped at the checkpoint by', signal.Signals(stop.signum).name, flush=True)
    sys.exit(0)
sys.exit(3)
"""


def test_a_signal_lost_in_a_ctypes_callback_stops_a_script_at_its_next_checkpoint():
    run = subprocess.run([sys.executable, '-c', LOST_IN_A_LOOP], capture_output=True, text=True, timeout=60,
                         cwd=pathlib.Path(__file__).parents[2])
    assert run.returncode == 0, run
    assert run.stdout.splitlines() == ['step 0', 'stopped at the checkpoint by SIGTERM'], run
