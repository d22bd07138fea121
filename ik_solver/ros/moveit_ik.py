"""MoveIt's IK service, ``moveit_msgs/srv/GetPositionIK``, answered by the IK node.

Why: MoveIt users and libraries (pymoveit2, MoveIt's own move_group clients)
call ``compute_ik``; serving the same type lets them use this solver without
MoveIt.  Each request becomes a ``SolveIK`` request to the node's
``solve_service_request``, run on the node's ``worker`` like its own solves,
so frames, seeds, bounds and reasons are handled once, by the node; the arm
never moves (``execute`` is false).

How the request maps:

- ``group_name``: this node has one group, its chain.  Parameter
  ``moveit_ik.group_name``: empty accepts any group name; otherwise the request
  must name it (or leave it empty), else INVALID_GROUP_NAME.
- ``ik_link_name`` / ``ik_link_names``: empty or the chain's tip link; any other
  link is INVALID_LINK_NAME.  ``pose_stamped_vector`` may hold one pose (with
  at most one ``ik_link_names`` entry); more end effectors are INVALID_LINK_NAME.
- ``pose_stamped``: the target, in any frame the node resolves (its links, or
  tf at ``header.stamp``); a frame it cannot resolve is FRAME_TRANSFORM_FAILURE.
- ``robot_state.joint_state``: the seed (chain joints; others ignored; missing
  chain joints come from joint_states).  Names and positions of different
  lengths, or non-finite chain joints, are INVALID_ROBOT_STATE.
- ``timeout``: the solve's budget; zero keeps the node's ``timeout`` parameter,
  longer than ``max_request_timeout`` is cut to it.
- ``avoid_collisions``: true asks for collision-free solutions; false keeps the
  node's ``avoid_collisions`` parameter (a client's default never switches off
  checks the operator turned on).
- ``constraints``: not supported; a request with any is INVALID_GOAL_CONSTRAINTS.

``solution.joint_state`` holds the chain joints on SUCCESS and is empty
otherwise, so a client that ignores the error code has nothing to execute.
"""
import math

from .parameters import Param

try:
    from moveit_msgs.srv import GetPositionIK
except ImportError:  # moveit_msgs is not on PyPI: the service is offered where ROS 2 has it
    GetPositionIK = None

#: MoveItErrorCodes values used here (moveit_msgs/msg/MoveItErrorCodes), one line per block of that message:
#: overall behaviour, goal, request, system and kinematics errors.
SUCCESS, FAILURE, INVALID_MOTION_PLAN, CONTROL_FAILED, TIMED_OUT, PREEMPTED = 1, 99999, -2, -4, -6, -7
GOAL_IN_COLLISION, GOAL_STATE_INVALID = -12, -27
INVALID_GROUP_NAME, INVALID_GOAL_CONSTRAINTS, INVALID_ROBOT_STATE, INVALID_LINK_NAME = -15, -16, -17, -18
FRAME_TRANSFORM_FAILURE, ROBOT_STATE_STALE = -21, -23
NO_IK_SOLUTION = -31

#: The node's reasons (SolveIK.Response names, lower case) as MoveItErrorCodes.
ERROR_CODES = {
    'success': SUCCESS,
    'unreachable': NO_IK_SOLUTION,
    'timeout': TIMED_OUT,
    'joint_limits': NO_IK_SOLUTION,
    'singular': NO_IK_SOLUTION,
    'joint_jump': NO_IK_SOLUTION,
    'outside_workspace': NO_IK_SOLUTION,
    'invalid_input': GOAL_STATE_INVALID,
    'no_robot_model': FAILURE,
    'unknown_frame': FRAME_TRANSFORM_FAILURE,
    'stale_state': ROBOT_STATE_STALE,
    'inconsistent_state': INVALID_ROBOT_STATE,
    'collision': GOAL_IN_COLLISION,
    'collision_path': INVALID_MOTION_PLAN,
    'limit_violation': INVALID_MOTION_PLAN,
    'superseded': PREEMPTED,
    'expired': TIMED_OUT,
    'controller_unavailable': CONTROL_FAILED,  # only where a request executes (compute_ik never does)
}

#: SolveIK.Request's avoid_collisions values.
COLLISIONS_DEFAULT, COLLISIONS_ON = 0, 1

PARAMETERS = (
    Param('moveit_ik.service_name', 'compute_ik', 'Name of the moveit_msgs/srv/GetPositionIK service (where '
          'moveit_msgs is installed); empty: not offered', read_only=True),
    Param('moveit_ik.group_name', '', 'MoveIt group name this chain answers to; empty: any group name'),
)


class RequestError(Exception):
    """A GetPositionIK request this node cannot take: a MoveItErrorCodes value and why."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def response_reason_names(response_type):
    """{code: lower-case name} of the reason constants of a SolveIK.Response type."""
    return {getattr(response_type, n): n.lower() for n in dir(response_type)
            if n.isupper() and isinstance(getattr(response_type, n), int)}


def _duration(d):
    return d.sec + d.nanosec * 1e-9


def _target(ik_request, tip_link):
    """Return the one PoseStamped of the request, after checking the link names; RequestError otherwise."""
    poses, links = list(ik_request.pose_stamped_vector), list(ik_request.ik_link_names)
    if len(poses) > 1 or len(links) > 1:
        raise RequestError(INVALID_LINK_NAME, f'this chain has one tip link ({tip_link}); got '
                                              f'{max(len(poses), len(links))} end-effector poses or links')
    link = links[0] if links else ik_request.ik_link_name
    if link not in ('', tip_link):
        raise RequestError(INVALID_LINK_NAME, f"ik_link_name '{link}' is not the chain's tip link '{tip_link}'")
    return poses[0] if poses else ik_request.pose_stamped


def _seed(joint_state, joint_names):
    """(names, positions) of the chain joints in ``joint_state``; RequestError if it is malformed."""
    if len(joint_state.name) != len(joint_state.position):
        raise RequestError(INVALID_ROBOT_STATE, f'robot_state.joint_state has {len(joint_state.name)} names and '
                                                f'{len(joint_state.position)} positions')
    chain = set(joint_names)
    seed = [(n, float(p)) for n, p in zip(joint_state.name, joint_state.position) if n in chain]
    bad = [n for n, p in seed if not math.isfinite(p)]
    if bad:
        raise RequestError(INVALID_ROBOT_STATE, f'robot_state has NaN or inf for {", ".join(bad)}')
    return [n for n, _ in seed], [p for _, p in seed]


def _has_constraints(constraints):
    return any(len(getattr(constraints, kind, ())) for kind in (
        'joint_constraints', 'position_constraints', 'orientation_constraints', 'visibility_constraints'))


def solve_request(ik_request, chain, group_name, max_timeout, request):
    """Fill the SolveIK ``request`` from a PositionIKRequest for ``chain``; RequestError if it cannot be taken."""
    if group_name and ik_request.group_name not in ('', group_name):
        raise RequestError(INVALID_GROUP_NAME, f"group '{ik_request.group_name}' is not served here; "
                                               f"this node solves group '{group_name}' ({chain.base_link} -> "
                                               f'{chain.tip_link})')
    if _has_constraints(ik_request.constraints):
        raise RequestError(INVALID_GOAL_CONSTRAINTS, 'constraints are not supported by this IK service')
    request.target = _target(ik_request, chain.tip_link)
    request.seed.name, request.seed.position = _seed(ik_request.robot_state.joint_state, chain.joint_names)
    timeout = _duration(ik_request.timeout)
    if not math.isfinite(timeout) or timeout < 0.0:
        raise RequestError(GOAL_STATE_INVALID, f'timeout must be finite and non-negative, got {timeout}')
    request.timeout = min(timeout, max_timeout)
    request.avoid_collisions = COLLISIONS_ON if ik_request.avoid_collisions else COLLISIONS_DEFAULT
    request.execute = False
    return request


def set_error(error_code, code, message):
    """Set a MoveItErrorCodes value (and its message/source fields, on distributions that have them)."""
    error_code.val = code
    if hasattr(error_code, 'message'):
        error_code.message = message
    if hasattr(error_code, 'source'):
        error_code.source = 'ik_solver'


class MoveItIKService:
    """Serves GetPositionIK for ``node`` through ``node.solve_service_request``; see the module docstring."""

    def __init__(self, node, service_type, name, solve_type):
        self._node = node
        self._solve_type = solve_type
        self._reasons = response_reason_names(solve_type.Response)
        self.service = node.create_service(service_type, name, self._serve, callback_group=node.worker.callback_group)

    async def _serve(self, request, response):
        return await self._node.worker.run(self.on_request, request, response)

    def on_request(self, request, response):
        """Answer one GetPositionIK request (on the node's worker: a solve never blocks the executor)."""
        code, message = self.answer(request.ik_request, response.solution)
        set_error(response.error_code, code, message)
        if code != SUCCESS:
            self._node.get_logger().info(f'compute_ik: error code {code}: {message}')
        return response

    def answer(self, ik_request, solution):
        """Solve ``ik_request``, fill ``solution`` (a RobotState) on success; return (error code, message)."""
        model = self._node.model
        if model is None:
            return FAILURE, 'no robot model loaded yet'
        try:
            request = solve_request(ik_request, model.chain, _parameter(self._node, 'moveit_ik.group_name', ''),
                                    _parameter(self._node, 'max_request_timeout', math.inf),
                                    self._solve_type.Request())
        except RequestError as exc:
            return exc.code, str(exc)
        response = self._node.solve_service_request(request)
        reason = self._reasons.get(response.reason, 'invalid_input')
        if response.success:
            solution.joint_state = response.solution
            return SUCCESS, ''
        return ERROR_CODES.get(reason, FAILURE), f'{reason}: {response.message}'


def _parameter(node, name, default):
    return node.get_parameter(name).value if node.has_parameter(name) else default


def declare_parameters(node):
    """Declare the ``moveit_ik.*`` parameters (read-only where a change would need a restart)."""
    for param in PARAMETERS:
        if not node.has_parameter(param.name):
            node.declare_parameter(param.name, param.default, param.descriptor())


def attach_moveit_service(node, service_type=None, solve_type=None):
    """Offer GetPositionIK on ``node`` where moveit_msgs is importable; return the MoveItIKService or None.

    ``service_type`` / ``solve_type``: GetPositionIK and SolveIK, or stand-ins of the same shape (tests).
    """
    declare_parameters(node)
    service_type = service_type or GetPositionIK
    name = _parameter(node, 'moveit_ik.service_name', 'compute_ik')
    if service_type is None or not name:
        node.get_logger().info('moveit_msgs is not installed: no GetPositionIK service' if service_type is None
                               else 'moveit_ik.service_name is empty: no GetPositionIK service')
        return None
    if solve_type is None:
        from ik_solver_interfaces.srv import SolveIK as solve_type
    return MoveItIKService(node, service_type, name, solve_type)
