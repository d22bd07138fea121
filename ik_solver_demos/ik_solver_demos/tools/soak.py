"""Soak: both nodes under random streams, lying state topics and CPU load, every command checked as executed.

    python -m ik_solver_demos.tools.soak --minutes 10 --load 2 [--seed 1] [--json result.json]

Two lanes run side by side, each a process of its own on a private ROS domain of its own (two domains, so
neither lane's lies reach the other's node):

- ``ik``: sim_arm_node (joint_trajectory_controller) and ik_solver_node (JointTrajectory output) with
  ik7.yaml; random reachable targets (PoseStamped) at random rates of 10-200 Hz, held or moving;
- ``servo``: sim_arm_node (forward_position_controller) and ik_servo_node (Float64MultiArray output) with
  servo_ik7.yaml; random twists (TwistStamped, m/s and rad/s) at 10-200 Hz, pulled back toward the start.

We run the lanes at once rather than in alternating phases: the nodes then share the CPU with each other and
with ``--load`` busy loops for the whole run, the harder case.  The servo drives forward_position only: its
JointTrajectory output is one point per cycle, which the IK lane's trajectory checks already cover.

Each lane (``soak_lane.Lane``) relays its simulator's true state to its node and lies beside it; every
command is checked as the controller executes it, by a checker written from ros2_controllers and independent
of the nodes (``soak_checks``), and against the simulator's true state when it was sent.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from .soak_checks import CONTROL_PERIOD
from .soak_lane import COMMAND_PERIOD, Lane, LIE_GAP, STARTUP_TIMEOUT, TRACKING

#: Private domains of the soak's lanes: clear of the tests' 10-59 and of demos' pid-derived picks in 1-101 where
#: possible.
FIRST_DOMAIN, DOMAIN_PAIRS = 60, 20


def run_lane(kind, seconds, seed, result_path, startup=STARTUP_TIMEOUT, lie_gap=LIE_GAP):
    """Run one lane in this process (its domain: ROS_DOMAIN_ID) and write its result as JSON.

    ``startup`` [s]: how long the node may take to answer (a first start after an install compiles its
    kernels for minutes); ``lie_gap`` [s]: (shortest, longest) quiet time before each lie.
    """
    log_dir = tempfile.mkdtemp(prefix=f'soak_{kind}_')
    lane = Lane(kind, seed, log_dir, lie_gap)
    seconds_run, ready, error = 0.0, False, None
    try:
        lane.connect()
        others = lane.strangers()
        if others:
            raise RuntimeError(f"ROS domain {os.environ.get('ROS_DOMAIN_ID')} is in use by {', '.join(others)}: "
                               "its joint_states and commands would mix with the soak's (choose --domain)")
        lane.start_processes()
        ready = lane.wait_ready(startup)
        if ready:
            seconds_run = lane.run(seconds)
        else:
            error = f'the node did not answer within {startup:g} s'
    except RuntimeError as exc:
        error = str(exc)
    finally:
        lane.running = False
        lane.exited = [p.module for p in lane.processes if not p.alive()]
        lane.stop_processes()
        lane.close()
    result = lane.result(seconds_run, ready)
    result['error'] = error
    with open(result_path, 'w') as f:
        json.dump(result, f)


# -- the whole soak ------------------------------------------------------------------------------------------------

def start_load(n):
    """Start ``n`` busy-loop processes (one core each)."""
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass'], start_new_session=True)
            for _ in range(n)]


def soak(minutes, load, seed, lanes=('ik', 'servo'), domain=None, startup=STARTUP_TIMEOUT, lie_gap=LIE_GAP):
    """Run the lanes for ``minutes`` beside ``load`` busy loops; return (results of the lanes, load averages).

    ``domain``: the first lane's ROS domain (the next lane takes the next one); ``startup`` [s]: how long a
    node may take to answer; ``lie_gap`` [s]: (shortest, longest) quiet time before each lie (a short soak
    packs its lies closer to meet as many of them).
    """
    first = int(domain) if domain is not None else FIRST_DOMAIN + 2 * (os.getpid() % DOMAIN_PAIRS)
    seconds = minutes * 60.0
    hogs = start_load(load)
    workers, results = [], []
    out_dir = tempfile.mkdtemp(prefix='soak_')
    try:
        for i, kind in enumerate(lanes):
            env = dict(os.environ, ROS_DOMAIN_ID=str(first + i), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                       PYTHONUNBUFFERED='1')
            path = os.path.join(out_dir, f'{kind}.json')
            cmd = [sys.executable, '-m', 'ik_solver_demos.tools.soak', '--lane', kind, '--seconds', str(seconds),
                   '--seed', str(seed + i), '--result', path, '--startup', str(startup),
                   '--lie-gap', str(lie_gap[0]), str(lie_gap[1])]
            workers.append((kind, path, subprocess.Popen(cmd, env=env, start_new_session=True)))
        loads = []
        deadline = time.monotonic() + seconds + startup + 120.0
        while any(p.poll() is None for _, _, p in workers) and time.monotonic() < deadline:
            loads.append(os.getloadavg()[0])
            time.sleep(min(5.0, max(0.5, seconds / 20)))
        for kind, path, p in workers:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
            if os.path.exists(path):
                with open(path) as f:
                    results.append(json.load(f))
            else:
                results.append({'lane': kind, 'ready': False, 'violations': [], 'error': f'exit code {p.returncode}'})
    finally:
        for _, _, p in workers:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
        for hog in hogs:
            hog.kill()
            hog.wait()
    return results, loads


def violation_causes(violations):
    """Group violations by cause: away from the true state, at a trajectory's join (first two ticks), the rest."""
    groups = {}
    for v in violations:
        if v['quantity'] == 'distance from the true state':
            cause = 'away from the true state'
        elif v.get('time', 1.0) <= 2.5 * CONTROL_PERIOD and v['quantity'] != 'malformed':
            cause = 'at the join (first two ticks)'
        else:
            cause = v['quantity']
        groups.setdefault(cause, []).append(v)
    return groups


def report(results, loads, minutes, load):
    """Return the text to print and the number of violations; a lane never ready counts as one."""
    lines = [f'soak: {minutes:g} min planned, load {load} busy loop(s); '
             f'load average mean {np.mean(loads) if loads else float("nan"):.2f}, max {max(loads, default=0):.2f}']
    bad = 0
    for r in results:
        lane = r['lane']
        if not r.get('ready'):
            lines.append(f'[{lane}] NEVER READY: {r.get("error", "")} logs {r.get("logs")}')
            bad += 1
            continue
        inputs = 'targets' if lane == 'ik' else 'twists'
        lines.append(f'[{lane}] ran {r["seconds"] / 60:.2f} min; {inputs} sent {r["inputs"]}; commands sent '
                     f'{r["commands"]} (checked {r["checked"]})')
        if lane == 'ik' and not r.get('controller_state'):
            lines.append('[ik] control_msgs is not installed: no controller_state (the simulator publishes none, the '
                         'node reads none), so no lies on it')
        lines.append(f'[{lane}] lies (episodes): ' + ', '.join(f'{k} {v}' for k, v in sorted(r['lies'].items()))
                     + f'; messages {sum(r["lie_messages"].values())}')
        lines.append(f'[{lane}] statuses: ' + ', '.join(f'{k} {v}' for k, v in sorted(r['statuses'].items(),
                                                                                      key=lambda kv: -kv[1])))
        flagged = {v['command'] for v in r['violations']}
        lines.append(f'[{lane}] commands outside the limits as the controller would execute them: {len(flagged)}')
        for cause, found in violation_causes(r['violations']).items():
            worst = max(found, key=lambda v: abs(v.get('value', 0.0)) / max(v.get('limit', 1.0), 1e-9))
            lines.append(f'    {cause}: {len({v["command"] for v in found})} command(s); worst: ' + ', '.join(
                f'{k} {worst[k]:.6g}' if isinstance(worst[k], float) else f'{k} {worst[k]}'
                for k in ('command', 'quantity', 'joint', 'value', 'limit', 'time') if k in worst))
        md, mf = r.get('max_distance'), r.get('max_first_distance')
        lines.append(f'[{lane}] max distance from the true state: any command {md if md is None else f"{md:.4f}"} '
                     f'rad, a first command {mf if mf is None else f"{mf:.4f}"} rad ({r["first_commands"]} first '
                     f'commands; allowed v_max x {COMMAND_PERIOD} s + {TRACKING[lane]} rad'
                     f'{" + kv/kp x the true velocity" if lane == "servo" else ""})')
        lines.append(f'[{lane}] simulator limit reports (its own witness): {r["simulator_reports"]}; its physics '
                     f'skipped ahead {r.get("physics_skips", 0)} time(s) (commands within 1 s not judged against it)'
                     + (f'; tracebacks in {r["tracebacks"]}' if r['tracebacks'] else ''))
        if r.get('first_solve'):
            fs = r['first_solve']
            lines.append(f'[{lane}] first ~/solve: service {fs.get("service_after_start", float("nan")):.2f} s '
                         f'after the node started; first call {fs.get("first_call", float("nan")):.3f} s, '
                         f'second {fs.get("second_call", float("nan")):.3f} s')
        bad += len(flagged) + len(r['tracebacks'])
    lines.append(f'VIOLATIONS: {bad}')
    return '\n'.join(lines), bad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--minutes', type=float, default=10.0)
    parser.add_argument('--load', type=int, default=2, help='busy-loop processes beside the soak')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--lanes', default='ik,servo')
    parser.add_argument('--domain', type=int, help="first of the lanes' ROS domains (default: from the pid)")
    parser.add_argument('--json', help="also write the lanes' results here")
    parser.add_argument('--lane', help=argparse.SUPPRESS)
    parser.add_argument('--seconds', type=float, help=argparse.SUPPRESS)
    parser.add_argument('--result', help=argparse.SUPPRESS)
    parser.add_argument('--startup', type=float, default=STARTUP_TIMEOUT,
                        help='seconds a node may take to answer (default %(default)s: kernels may compile)')
    parser.add_argument('--lie-gap', type=float, nargs=2, default=LIE_GAP, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # stop the children on the way out
    if args.lane:
        run_lane(args.lane, args.seconds, args.seed, args.result, args.startup, tuple(args.lie_gap))
        return 0
    results, loads = soak(args.minutes, args.load, args.seed, tuple(args.lanes.split(',')), args.domain,
                          args.startup)
    text, bad = report(results, loads, args.minutes, args.load)
    print(text, flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'results': results, 'loads': loads}, f, indent=1)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
