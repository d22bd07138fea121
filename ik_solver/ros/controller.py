"""The IK node's one line to a joint_trajectory_controller: commands out, the controller's own state in.

Why: a move must start from where the controller *is* — the setpoint it tracks (its ``reference``,
with velocity and acceleration) — not from joint_states or from what we last sent, and the node must
learn what became of each command.  joint_trajectory_controller offers both only through control_msgs
(not on PyPI): ``<controller_name>/controller_state`` (JointTrajectoryControllerState) and the
``<controller_name>/follow_joint_trajectory`` action (FollowJointTrajectory, with a result code).
Where control_msgs is missing, the topic interface still works, ``reference()`` returns None and the
node falls back to its other sources; the action interface is refused at construction with the reason.

Command interfaces:

- ``'topic'``: publish the JointTrajectory on ``trajectory_topic`` (the controller replaces what it
  runs); event ``sent``.  Fire and forget: the controller reports nothing back on this path.
- ``'action'``: send a FollowJointTrajectory goal.  Events: ``sent``; ``accepted`` or ``rejected``;
  then ``succeeded``, ``aborted`` or ``canceled`` with the result's error_code and error_string.  A goal
  replaced by a newer one ends as ``preempted``.  The previous goal is canceled only once the newer one
  is accepted: joint_trajectory_controller preempts on acceptance itself, and a cancel sent earlier
  would make it hold position between the two goals.  A rejected goal leaves the running one alone.

The reference is believed only through a ``motion.plausibility.StatePlausibility`` when one is given (the
node's: a setpoint moves within the limits, so a tight tolerance unmasks a lie between two messages) and
never when stamped in the future.  The model's ``pause`` is cut to ``REFERENCE_PAUSE``: a controller
publishes every few milliseconds, so a longer silence is no continuity, and the reach it would grant (a
quarter second of full acceleration) exceeds the tight tolerance; after it a run of consistent references
must settle first.  Header stamps are turned into monotonic instants through one offset
(``stamps.MonotonicStamps``), as joint_states are: reading both clocks anew for each message put a thread's
preemption into the stamp, and a true reference then looked older than the one before it.

``on_event(execution, error_code, message)`` is called from executor threads; ``error_code`` is
control_msgs' (0 = SUCCESSFUL; ``REJECTED_CODE`` for a rejected goal).  With no action server, ``send`` says so to
its caller instead: nothing was sent.
"""
from dataclasses import replace
import threading
import time

import numpy as np
from rclpy.action import ActionClient
from rclpy.time import Time
from trajectory_msgs.msg import JointTrajectory

from .joint_states import StateError
from .messages import serialized_trajectory, trajectory_message
from .stamps import MonotonicStamps
from ..motion.limits import MotionState
from ..motion.plausibility import CLOCK_TOLERANCE, Reading, Verdict

try:
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTrajectoryControllerState
except ImportError:  # not on PyPI; every ROS 2 install has it
    FollowJointTrajectory = JointTrajectoryControllerState = None

COMMAND_INTERFACES = ('topic', 'action')
EXECUTIONS = ('sent', 'accepted', 'rejected', 'succeeded', 'aborted', 'canceled', 'preempted')
#: error_code of a rejected goal: control_msgs FollowJointTrajectory.Result.INVALID_GOAL.
REJECTED_CODE = -1
#: action_msgs/GoalStatus terminal codes -> our execution names (any other status is reported as aborted).
TERMINAL_STATUS = {4: 'succeeded', 5: 'canceled', 6: 'aborted'}
#: Longest silence of the reference across which continuity is assumed [s]: a few periods of a controller
#: (it publishes at its update rate, 100 Hz and more); the reach over it at rest stays within a hundredth.
REFERENCE_PAUSE = 0.05
#: How the model's messages name the reference.
SOURCE = 'controller_state'


class ControllerError(ValueError):
    """The controller interface cannot be set up as asked (the reason says why)."""


class ControllerInterface:
    """Sends trajectories to one joint_trajectory_controller and reads its reference; see the module docstring.

    ``state_group``: the callback group of the ``controller_state`` subscription (default ``callback_group``;
    the IK node's inputs thread takes it).  ``state_type``, ``action_type`` and ``action_client_class``
    default to control_msgs' and rclpy's, and ``monotonic_ns`` to ``time.monotonic_ns``; tests pass stand-ins
    (a simulated clock).
    """

    def __init__(self, node, joint_names, trajectory_topic, controller_name, command_interface='topic',
                 on_event=None, callback_group=None, *, state_group=None, state_type=None, action_type=None,
                 action_client_class=None, plausibility=None, monotonic_ns=None):
        if command_interface not in COMMAND_INTERFACES:
            raise ControllerError(f"command_interface must be one of {', '.join(COMMAND_INTERFACES)}, "
                                  f'got {command_interface!r}')
        state_type = state_type or JointTrajectoryControllerState
        action_type = action_type or FollowJointTrajectory
        if command_interface == 'action' and action_type is None:
            raise ControllerError("command_interface 'action' needs control_msgs (FollowJointTrajectory), which "
                                  "is not importable here; use 'topic' or install ros-<distro>-control-msgs")
        self._node = node
        self._names = list(joint_names)
        self._on_event = on_event
        self._lock = threading.Lock()
        self._latest = None          # (receipt, described instant or None, MotionState), monotonic [s]
        self._plausibility = plausibility   # StatePlausibility judging each reference, or None
        if plausibility is not None:
            s = plausibility.settings
            plausibility.settings = replace(s, pause=min(s.pause, REFERENCE_PAUSE), source=SOURCE)
        self._monotonic_ns = monotonic_ns or time.monotonic_ns
        self._stamps = MonotonicStamps(node.get_clock(), self._monotonic_ns)
        self._refused = None         # the plausibility model's refusal of the newest reference (Assessment)
        self._logged = set()         # reasons already logged: a bad state stream warns once per reason
        self._sequence = 0           # number of the last goal sent
        self._active = None          # (number, goal handle) of the newest accepted goal
        self._superseded = set()     # numbers of accepted goals a newer goal replaced
        self.state_topic = f'{controller_name}/controller_state'
        self.state_available = state_type is not None
        self._subscription = None
        if self.state_available:
            self._subscription = node.create_subscription(state_type, self.state_topic, self._on_state, 10,
                                                          callback_group=state_group or callback_group)
        self.command_interface = command_interface
        self._publisher = self._client = None
        if command_interface == 'topic':
            self.command_target = trajectory_topic
            self._publisher = node.create_publisher(JointTrajectory, trajectory_topic, 10)
        else:
            self.command_target = f'{controller_name}/follow_joint_trajectory'
            self._action_type = action_type
            self._client = (action_client_class or ActionClient)(node, action_type, self.command_target,
                                                                 callback_group=callback_group)

    # -- state in ------------------------------------------------------------------------------

    def reference(self, max_age=0.1):
        """Return the controller's setpoint state, a MotionState in our joint order, if it is max_age s fresh.

        Fresh means received within ``max_age`` s and, when the header stamp is set (non-zero), stamped at most
        ``max_age`` s before the node's clock (sim time too): a delayed or replayed state is not where the
        controller is now.  Its ``time`` is the monotonic instant it describes (its stamp, else its arrival).
        None also while the plausibility model waits for a run of consistent references; StateError when it
        refused the newest one (a reference that jumped, or one stamped in the future): no move may start then.
        """
        with self._lock:
            latest, refused = self._latest, self._refused
        if refused is not None:
            raise StateError(refused.reason, f'{self.state_topic}: {refused.message}', refused.verdict)
        now = self._monotonic_ns() * 1e-9
        if latest is None or now - latest[0] > max_age:
            return None
        received, described, state = latest
        at = received
        if described is not None:
            age = now - described
            if age > max_age:
                self._warn_once(f'reference stamped {age:.3f} s before now (more than {max_age} s)')
                return None
            at = min(described, now)
        return MotionState(state.position.copy(), state.velocity.copy(), state.acceleration.copy(), at)

    def _on_state(self, msg):
        state, problem = reference_state(msg, self._names)
        stamp = Time.from_msg(msg.header.stamp).nanoseconds
        now = self._monotonic_ns() * 1e-9
        described = self._stamps.instant(stamp) if stamp > 0 else None
        ahead = 0.0 if described is None else described - now
        refused = None
        if state is not None and self._plausibility is not None:
            with self._lock:
                result = self._plausibility.update(
                    Reading(tuple(self._names), state.position, state.velocity, now + ahead, now), now)
            if not result.believed:
                state, refused = None, None if result.verdict == Verdict.SETTLING else result
        elif state is not None and ahead > CLOCK_TOLERANCE:
            state, problem = None, f'reference stamped {ahead:.3f} s in the future (clock tolerance ' \
                                   f'{CLOCK_TOLERANCE:g} s)'
        with self._lock:
            self._latest = None if state is None else (now, described, state)
            self._refused = refused
        if problem is not None:
            self._warn_once(problem)
        if refused is not None:
            self._node.get_logger().warning(f'{self.state_topic}: {refused.message}; no move starts from it',
                                            throttle_duration_sec=2.0)

    def _warn_once(self, problem):
        if problem not in self._logged:
            self._logged.add(problem)
            self._node.get_logger().warning(f'{self.state_topic}: {problem}; not used as the start of moves')

    # -- commands out --------------------------------------------------------------------------

    def send_path(self, names, path, stamp):
        """Send a TimedPath as the JointTrajectory ``trajectory_message(names, path, stamp)`` (see ``send``).

        On a topic it is published as serialized bytes written from the path's arrays
        (``serialized_trajectory``): no message object is built for the streamed hot path.
        """
        if self._publisher is None:
            return self.send(trajectory_message(names, path, stamp))
        self._publisher.publish(serialized_trajectory(names, path, stamp))
        self._emit('sent', 0, f'{len(path.times)} points over {path.times[-1]:.3f} s on {self.command_target}')
        return None

    def send(self, msg):
        """Send one JointTrajectory: publish it, or send it as a goal that preempts the previous one.

        Return None, or why it could not be sent (no action server): the command then did not happen, and its
        sender says so in its own answer.
        """
        if self._publisher is not None:
            self._publisher.publish(msg)
            self._emit('sent', 0, f'{_describe(msg)} on {self.command_target}')
            return None
        if not self._client.server_is_ready():
            return f'action server {self.command_target} is not available'
        with self._lock:
            self._sequence += 1
            number = self._sequence
        goal = self._action_type.Goal()
        goal.trajectory = msg
        future = self._client.send_goal_async(goal)
        self._emit('sent', 0, f'goal {number}: {_describe(msg)}')
        future.add_done_callback(lambda done: self._on_goal_response(number, done))
        return None

    def _on_goal_response(self, number, future):
        try:
            handle = future.result()
        except Exception as exc:  # rclpy sets the transport's error on the future
            self._emit('rejected', REJECTED_CODE, f'goal {number}: sending failed: {exc}')
            return
        if handle is None or not handle.accepted:
            self._emit('rejected', REJECTED_CODE, f'goal {number}: rejected by {self.command_target}')
            return
        with self._lock:
            if self._active is None or self._active[0] < number:
                stale, self._active = self._active, (number, handle)   # the newest: the previous one is stale
            else:
                stale = (number, handle)   # a newer goal was accepted first: this one is stale already
            if stale is not None:
                self._superseded.add(stale[0])
        self._emit('accepted', 0, f'goal {number}')
        handle.get_result_async().add_done_callback(lambda done: self._on_result(number, done))
        if stale is not None:
            stale[1].cancel_goal_async()

    def _on_result(self, number, future):
        try:
            response = future.result()
            status, code, text = response.status, response.result.error_code, response.result.error_string
        except Exception as exc:  # as in _on_goal_response
            status, code, text = None, REJECTED_CODE, f'no result: {exc}'
        execution = TERMINAL_STATUS.get(status, 'aborted')
        with self._lock:
            superseded = number in self._superseded
            self._superseded.discard(number)
            if self._active is not None and self._active[0] == number:
                self._active = None
        if superseded and execution != 'succeeded':
            execution = 'preempted'
        if status not in TERMINAL_STATUS and status is not None:
            text = f'goal ended with status {status}' + (f': {text}' if text else '')
        self._emit(execution, int(code), f'goal {number}: {text or execution}')

    def _emit(self, execution, error_code, message):
        if self._on_event is not None:
            self._on_event(execution, error_code, message)

    def destroy(self):
        """Release the subscription, publisher and action client (the node stays)."""
        if self._subscription is not None:
            self._node.destroy_subscription(self._subscription)
        if self._publisher is not None:
            self._node.destroy_publisher(self._publisher)
        if self._client is not None:
            self._client.destroy()


def reference_state(msg, names):
    """(MotionState of ``msg.reference`` in the order of ``names``, None) or (None, the reason it is unusable).

    Positions and velocities are required: a move planned from a moving setpoint as if it were at rest would
    jump in velocity, so a state without velocities is unusable (the node falls back to its other sources).
    Empty accelerations read as zeros: a wrong zero start acceleration costs a step in acceleration, never one
    in velocity or position (joint_trajectory_controller fills them anyway).  Any other length, a duplicate or
    missing joint, or a non-finite value makes the whole state unusable.
    """
    given = list(msg.joint_names)
    index = {name: i for i, name in enumerate(given)}
    if len(index) != len(given):
        return None, 'duplicate joint names'
    missing = [name for name in names if name not in index]
    if missing:
        return None, f'joints {", ".join(missing)} missing'
    order = [index[name] for name in names]
    point = msg.reference
    values = []
    for field, required in (('positions', True), ('velocities', True), ('accelerations', False)):
        array = np.asarray(getattr(point, field), dtype=float)
        if array.size == 0 and not required:
            values.append(np.zeros(len(names)))
        elif array.shape != (len(given),):
            return None, f'reference {field} has {array.size} values for {len(given)} joints'
        elif not np.all(np.isfinite(array)):
            return None, f'reference {field} are not finite'
        else:
            values.append(array[order])
    return MotionState(*values), None


def _describe(msg):
    if not msg.points:
        return 'empty trajectory'
    end = msg.points[-1].time_from_start
    return f'{len(msg.points)} points over {end.sec + end.nanosec * 1e-9:.3f} s'
