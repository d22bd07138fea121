"""The end-to-end demo: a simulated arm really goes where it is told.

Starts the MuJoCo arm (sim_arm_node) and ik_solver_node as processes,
streams a circle at 100 Hz from the arm's first posture, sends a set of
targets (easy reaches, a stretched near-singular pose, a target near the
joint limits, an unreachable one), then prints what the simulator measured
and writes a figure.
"""
import argparse
import collections
import os
import signal
import sys
import tempfile
import time

from ik_solver.core.chain import load_chain
from ik_solver.core.transforms import make_pose, pose_error
from ik_solver.ros.spin import ShutdownRequested, ShutdownSignals
import numpy as np
import rclpy
from rclpy.signals import SignalHandlerOptions

from .launcher import node_args, NodeProcess
from .observer import ArmObserver, send_answered, simulation_failures, simulator_complaints, without_gc_pauses
from .resources import arm_files, private_ros_domain

DOWN = [1.0, 0.0, 0.0, 0.0]  # tool z pointing down (180 deg about x)
FORWARD = [0.0, 0.7071067811865476, 0.0, 0.7071067811865476]  # tool z along +x
# The circle's tool orientation: z down and x back (180 deg about y), which the arm holds with its wrist joints
# mid-range; DOWN needs joint7 within 0.1 rad of its limit.
CIRCLE_DOWN = [0.0, 1.0, 0.0, 0.0]


def demo_targets(chain):
    """(name, 4x4 target, expected reachable) for the bundled ik7 arm."""
    near_limits = np.array([2.7, 1.7, -2.6, -1.8, 2.5, 1.8, 2.8])
    return [
        # The circle's orientation: DOWN turns the wrist by about pi from there, which a search cut short by a
        # busy host answered with a flip beyond max_joint_jump now and then ('joint_jump').
        ('easy reach, front', make_pose([0.55, 0.0, 0.45], CIRCLE_DOWN), True),
        ('easy reach, side', make_pose([0.2, 0.5, 0.35], CIRCLE_DOWN), True),
        ('stretched, near-singular', make_pose([0.92, 0.0, 0.36], FORWARD), True),
        ('near the joint limits', chain.fk(near_limits), True),
        ('unreachable (1.6 m away)', make_pose([1.6, 0.0, 0.4], DOWN), False),
        # DOWN: the solution nearest the pose near the limits (joint7 there too) is a move without a flip;
        # CIRCLE_DOWN's would turn joint7 by about pi, more than max_joint_jump when the search is cut short.
        ('back to start', make_pose([0.5, 0.0, 0.5], DOWN), True),
    ]


def circle(center, radius, period, rate, loops, orientation):
    """Targets on a circle in the y-z plane: (times, 4x4 poses)."""
    times = np.arange(0.0, loops * period, 1.0 / rate)
    angle = 2 * np.pi * times / period
    points = center + radius * np.stack([np.zeros_like(angle), np.sin(angle), np.cos(angle) - 1], axis=1)
    return times, [make_pose(p, orientation) for p in points]


def distance_to_path(points, path):
    """Distance of each point from the polyline through ``path``'s samples [m].

    Measured to the segments, not to the samples: at 100 Hz the circle's samples are 1.9 mm apart, so a tip
    exactly on the circle between two of them would count up to 0.9 mm of error that is not there.

    Args:
        points: (m, 3) positions [m].
        path: (n, 3) consecutive samples of the path, n >= 2 [m].

    Returns:
        (m,) the distance of each point from the nearest segment [m].
    """
    a, b = path[:-1], path[1:]
    ab = b - a
    offset = points[:, None, :] - a[None, :, :]
    t = np.clip(np.einsum('mnk,nk->mn', offset, ab) / np.einsum('nk,nk->n', ab, ab), 0.0, 1.0)
    return np.linalg.norm(offset - t[..., None] * ab[None, :, :], axis=2).min(axis=1)


class Demo:

    def __init__(self, arm, output_dir, kinematic, attach=False, checkpoint=lambda: None):
        """``checkpoint``: called at each step; it raises to stop the demo (ShutdownSignals.check)."""
        self.checkpoint = checkpoint
        self.urdf, self.config = arm_files(arm)
        self.chain = load_chain(self.urdf, 'base_link', 'tool0')
        # load the kernels the run uses now: a stop signal during a numba cache load is lost in its ctypes callback
        pose_error(self.chain.fk(self.chain.mid_configuration()), np.eye(4))
        self.output_dir = output_dir
        self.kinematic = kinematic
        self.attach = attach
        self.rows = []
        self.path = {}
        self.processes = []

    def start(self):
        if self.attach:  # the nodes were started by someone else (demo.launch.py)
            self.observer = ArmObserver(self.chain.joint_names)
            if not self.observer.wait_ready(60.0):
                raise RuntimeError('no sim_arm_node / ik_solver_node found to attach to')
            return
        logs = tempfile.mkdtemp(prefix='ik_demo_')
        common = {'urdf_file': self.urdf}
        self.processes = [
            NodeProcess('sim.sim_arm_node', node_args(self.config, {**common, 'kinematic': self.kinematic}),
                        os.path.join(logs, 'sim_arm.log')),
            NodeProcess('ros.ik_node', node_args(self.config, common), os.path.join(logs, 'ik_solver.log')),
        ]
        print(f'started sim_arm_node and ik_solver_node (logs in {logs})')
        self.observer = ArmObserver(self.chain.joint_names)
        if not self.observer.wait_ready(30.0):
            raise RuntimeError('the simulator or the IK node did not come up; see the logs in ' + logs)

    def stop(self):
        for process in self.processes:
            process.stop()

    def run_targets(self):
        """Send the demo's targets one by one (``demo_targets``)."""
        for name, target, reachable in demo_targets(self.chain):
            self.run_target(name, target, reachable)

    def run_target(self, name, target, reachable):
        """Send one target, wait until it is executed (or refused) and add its row to the table."""
        self.checkpoint()
        q_before = self.observer.latest_joints()[1]
        sent, status = self.send_and_wait(name, target)
        if status.trajectory_published:
            self.observer.wait_executed(sent, status)
        else:
            time.sleep(0.5)
        pe, re = pose_error(target, self.observer.latest_tip())
        moved = float(np.abs(self.observer.latest_joints()[1] - q_before).max())
        reached = pe < 2e-3 and re < 1e-2
        self.rows.append((name, status.success, reached, pe, re, status.solve_time, moved, reachable))
        verdict = 'reached' if reached else ('not reached' + (', arm did not move' if moved < 1e-3 else ''))
        print(f'  {name:<28} {verdict:<32} error {pe * 1e3:8.3f} mm {re:8.5f} rad  '
              f'solve {status.solve_time * 1e3:6.2f} ms  ({status.reason})', flush=True)

    def send_and_wait(self, name, target, attempts=3):
        """Send ``target`` and return (send time, status); a target lost or expired is sent again (``send_answered``).

        An overloaded machine can deliver a target after ``max_target_age``; the node is right not to move, and an
        operator would send it again with a fresh stamp, so the demo does that, says so, and gives up after
        ``attempts``.
        """
        def say(status):
            why = 'no answer' if status is None else f'expired on arrival ({status.message})'
            print(f'  {name:<28} {why}; sending it again', flush=True)

        sent, status = send_answered(self.observer, target, attempts, on_retry=say)
        if status is None:
            raise RuntimeError('ik_solver_node did not answer a target')
        return sent, status

    def run_path(self, rate=100.0, period=4.0, loops=1):
        """Bring the arm to the circle's start, then stream the circle and measure the distance from it.

        Run first, from the simulator's initial posture, the circle starts from the same solution every time:
        a redundant arm's streamed solutions stay near where they began, so a posture left by other targets
        (one near the joint limits) would decide how near the limits the circle runs.  With ``--attach`` it
        starts from wherever the running arm is.
        """
        start_pose = make_pose([0.5, 0.0, 0.5], CIRCLE_DOWN)
        self.run_target('circle start', start_pose, True)
        times, poses = circle(start_pose[:3, 3], 0.12, period, rate, loops, CIRCLE_DOWN)
        print(f'  streaming a circle of radius 0.12 m at {rate:.0f} Hz for {times[-1] + 1 / rate:.1f} s ...',
              flush=True)
        sent, tips = [], []
        with without_gc_pauses():
            t0 = time.monotonic()
            for t, T in zip(times, poses):
                self.checkpoint()
                delay = t0 + t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sent.append(self.observer.send_target(T))
                tips.append(self.observer.latest_tip())
        self.observer.wait_settled(time.monotonic(), timeout=3.0)
        # The arm follows a little behind the stream: measure how far it strays from the path.
        path = np.array([T[:3, 3] for T in poses])
        errors = distance_to_path(np.array([tip[:3, 3] for tip in tips[len(tips) // 10:]]), path)
        statuses = [s for t, s in self.observer.statuses if t >= sent[0]]
        solved = sum(s.success for s in statuses)
        self.path = {'targets': np.array([T[:3, 3] for T in poses]), 'tips': np.array([T[:3, 3] for T in tips]),
                     'sent': np.array(sent)}
        final = pose_error(poses[-1], self.observer.latest_tip())
        # A target that reached the node too late is rightly dropped ('expired'): it is no failure to solve.
        expired = sum(s.reason == 'expired' for s in statuses)
        self.rows.append(('circle, streamed', solved == len(statuses) - expired, final[0] < 2e-3, final[0], final[1],
                          float(np.median([s.solve_time for s in statuses])), float('nan'), True))
        unsolved = collections.Counter(s.reason for s in statuses if not s.success and s.reason != 'expired')
        notes = [f'{count} {reason}' for reason, count in unsolved.items()]
        notes += [f'{expired} expired on arrival'] if expired else []
        detail = f' ({", ".join(notes)})' if notes else ''
        print(f'  circle: {solved}/{len(statuses) - expired} targets solved{detail}, distance from the path median '
              f'{np.median(errors) * 1e3:.2f} mm, max {np.max(errors) * 1e3:.2f} mm', flush=True)

    def table(self):
        lines = ['', f"{'target':<28} {'solved':>6} {'reached':>8} {'pos err [mm]':>13} {'rot err [rad]':>14} "
                 f"{'solve [ms]':>11}", '-' * 86]
        for name, solved, reached, pe, re, solve, _, _ in self.rows:
            lines.append(f'{name:<28} {str(solved):>6} {str(reached):>8} {pe * 1e3:13.3f} {re:14.5f} '
                         f'{solve * 1e3:11.3f}')
        return '\n'.join(lines)

    def failures(self):
        """Return why the demo failed (empty when it passed).

        Every reachable target solved and reached, the unreachable one refused without moving the arm, and
        a simulation that can be trusted: nothing executed beyond the limits, physics on time.
        """
        reasons = []
        for name, solved, reached, _, _, _, moved, reachable in self.rows:
            if reachable and not (solved and reached):
                reasons.append(f'{name}: ' + ('not reached' if solved else 'not solved'))
            if not reachable and (solved or moved > 1e-3):
                reasons.append(f'{name}: ' + ('solved' if solved else 'the arm moved'))
        with self.observer.lock:
            violations = [report for _, report in self.observer.violations]
        return reasons + simulation_failures(violations, self.simulator_log())

    def simulator_log(self):
        """Return the simulator's log ('' when the nodes were started by someone else)."""
        return self.processes[0].output() if self.processes else ''

    def print_complaints(self, limit=20):
        """Print the simulator's warnings and errors (the first ``limit``), so the user sees what it saw."""
        complaints = simulator_complaints(self.simulator_log())
        if complaints:
            print(f'\nthe simulator complained ({len(complaints)} distinct lines):')
            for line in complaints[:limit]:
                print('  ' + line)

    def figure(self):
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        with self.observer.lock:
            log = list(self.observer.joint_log)
        t = np.array([s[0] for s in log]) - log[0][0]
        Q = np.array([s[1] for s in log])
        sig = np.linalg.svd(self.chain.jacobian_batch(Q[::5]), compute_uv=False)[:, -1]
        fig, axes = plt.subplots(1, 3, figsize=(17, 5))
        ax = axes[0]
        ax.plot(self.path['targets'][:, 1], self.path['targets'][:, 2], 'g-', lw=3, alpha=0.5, label='targets')
        ax.plot(self.path['tips'][:, 1], self.path['tips'][:, 2], 'b-', lw=1, label='end effector (MuJoCo)')
        ax.set(xlabel='y [m]', ylabel='z [m]', title='Streamed circle: target vs end effector', aspect='equal')
        ax.legend()
        ax = axes[1]
        for j, name in enumerate(self.chain.joint_names):
            line, = ax.plot(t, Q[:, j], label=name)
            ax.axhline(self.chain.upper[j], color=line.get_color(), ls=':', lw=0.8)
            ax.axhline(self.chain.lower[j], color=line.get_color(), ls=':', lw=0.8)
        ax.set(xlabel='time [s]', ylabel='joint position [rad]', title='Joints (dotted: limits)')
        ax.legend(fontsize=7, ncol=2)
        ax = axes[2]
        ax.plot(t[::5], sig)
        ax.set(xlabel='time [s]', ylabel='sigma_min of J', title='Distance to singularity', yscale='log')
        fig.tight_layout()
        os.makedirs(self.output_dir, exist_ok=True)
        path = os.path.join(self.output_dir, 'ik_demo.png')
        fig.savefig(path, dpi=110)
        return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--output-dir', default='demo_output', help='where the figure goes')
    parser.add_argument('--kinematic', action='store_true', help='no physics: perfect tracking')
    parser.add_argument('--attach', action='store_true', help='use running nodes instead of starting them')
    args, _ = parser.parse_known_args(argv)  # ros2 launch appends --ros-args
    started = time.monotonic()
    # SIGINT, SIGTERM or SIGHUP raise ShutdownRequested here (no rclpy signal handlers), so the
    # cleanup below runs with a valid context and the demo exits 0; later signals are ignored.
    signals = ShutdownSignals(raising=True)
    if not args.attach:  # under launch the domain is the launch file's choice
        domain, picked = private_ros_domain()
        print(f'ROS_DOMAIN_ID={domain}' + (' (private; set ROS_DOMAIN_ID to choose)' if picked else ''))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    demo = Demo('ik7', args.output_dir, args.kinematic, args.attach, checkpoint=signals.check)
    ok = interrupted = False
    try:
        demo.start()
        print(f'ik7 arm ready after {time.monotonic() - started:.1f} s; sending targets')
        demo.run_path()
        demo.run_targets()
        print(demo.table())
        print(f'\nfigure written to {os.path.abspath(demo.figure())}')
        demo.print_complaints()
        failures = demo.failures()
        ok = not failures
        print(f'demo {"passed" if ok else "FAILED"} in {time.monotonic() - started:.1f} s'
              + ''.join(f'\n  - {reason}' for reason in failures))
    except ShutdownRequested as stop:
        interrupted = True
        print(f'\n{signal.Signals(stop.signum).name}: stopping the nodes', flush=True)
    finally:
        signals.raising = False
        demo.stop()  # the child processes first: they must not outlive the demo
        if hasattr(demo, 'observer'):
            demo.observer.close()
        rclpy.try_shutdown()
    return 0 if ok or interrupted else 1


if __name__ == '__main__':
    sys.exit(main())
