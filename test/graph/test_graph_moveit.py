"""MoveIt's GetPositionIK served through the node's SolveIK handling, with small in-test stand-ins.

The stand-ins have the fields of moveit_msgs' PositionIKRequest, RobotState and
MoveItErrorCodes that the service reads and writes; where moveit_msgs is
installed, its real constants are compared too.
"""
import math
from types import SimpleNamespace

from ik_solver.core.chain import load_chain
from ik_solver_demos.tools.resources import arm_files
import pytest

pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')
from ik_solver.ros import moveit_ik  # noqa: E402, I100
from ik_solver_interfaces.srv import SolveIK  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

#: The numbers moveit_msgs/msg/MoveItErrorCodes gives.
MOVEIT_CODES = {'SUCCESS': 1, 'NO_IK_SOLUTION': -31, 'TIMED_OUT': -6, 'FRAME_TRANSFORM_FAILURE': -21,
                'INVALID_LINK_NAME': -18, 'INVALID_GROUP_NAME': -15, 'INVALID_ROBOT_STATE': -17,
                'INVALID_GOAL_CONSTRAINTS': -16, 'GOAL_IN_COLLISION': -12, 'GOAL_STATE_INVALID': -27,
                'ROBOT_STATE_STALE': -23, 'PREEMPTED': -7, 'INVALID_MOTION_PLAN': -2, 'CONTROL_FAILED': -4,
                'FAILURE': 99999}


def ik_request(**fields):
    """Return a PositionIKRequest stand-in with the defaults of moveit_msgs."""
    request = SimpleNamespace(
        group_name='', robot_state=SimpleNamespace(joint_state=JointState()), avoid_collisions=False,
        constraints=SimpleNamespace(joint_constraints=[], position_constraints=[], orientation_constraints=[],
                                    visibility_constraints=[]),
        ik_link_name='', ik_link_names=[], pose_stamped_vector=[], timeout=SimpleNamespace(sec=0, nanosec=0),
        pose_stamped=SolveIK.Request().target)
    request.pose_stamped.header.frame_id = 'base_link'
    request.pose_stamped.pose.position.x = 0.5
    for name, value in fields.items():
        setattr(request, name, value)
    return request


class FakeNode:
    """The IK node's public interface: model, solve_service_request, worker, parameters, logger, create_service."""

    def __init__(self, chain, reason='success', params=None):
        self.model = SimpleNamespace(chain=chain, name='ik7')
        self.reason = reason
        self.requests = []
        self.params = {'max_request_timeout': 1.0, **(params or {})}
        self.logged = []
        self.worker = SimpleNamespace(callback_group=None)

    def solve_service_request(self, request):
        self.requests.append(request)
        response = SolveIK.Response(success=self.reason == 'success', reason=getattr(SolveIK.Response,
                                                                                     self.reason.upper()))
        response.message = 'why'
        response.solution = JointState(name=self.model.chain.joint_names, position=[0.1] * self.model.chain.n)
        return response

    def has_parameter(self, name):
        return name in self.params

    def get_parameter(self, name):
        return SimpleNamespace(value=self.params[name])

    def declare_parameter(self, name, value, descriptor):
        self.params[name] = value

    def get_logger(self):
        return SimpleNamespace(info=self.logged.append)

    def create_service(self, service_type, name, callback, callback_group):
        self.service_name = name
        return SimpleNamespace(callback=callback)


@pytest.fixture(scope='module')
def chain():
    return load_chain(arm_files('ik7')[0], 'base_link', 'tool0')


def service(node):
    """Attach the service to node with a stand-in GetPositionIK type."""
    return moveit_ik.attach_moveit_service(node, service_type=object())


def answer(node, request):
    solution = SimpleNamespace(joint_state=JointState())
    code, message = service(node).answer(request, solution)
    return code, message, solution


def test_error_code_numbers_are_moveits():
    for name, value in MOVEIT_CODES.items():
        assert getattr(moveit_ik, name) == value, name


def test_error_code_numbers_match_installed_moveit_msgs():
    msgs = pytest.importorskip('moveit_msgs.msg', reason='moveit_msgs is not installed (not on PyPI)')
    for name, value in MOVEIT_CODES.items():
        assert getattr(msgs.MoveItErrorCodes, name) == value, name


def test_every_solve_reason_has_a_moveit_code():
    reasons = moveit_ik.response_reason_names(SolveIK.Response)
    assert set(reasons.values()) == set(moveit_ik.ERROR_CODES)
    assert moveit_ik.ERROR_CODES['success'] == 1 and moveit_ik.ERROR_CODES['unreachable'] == -31
    assert moveit_ik.ERROR_CODES['timeout'] == -6 and moveit_ik.ERROR_CODES['unknown_frame'] == -21


def test_success_converts_the_request_and_returns_the_chain_joints(chain):
    node = FakeNode(chain)
    seed = JointState(name=['finger', *chain.joint_names[::-1]], position=[9.0, *[0.2] * chain.n])
    request = ik_request(group_name='arm', robot_state=SimpleNamespace(joint_state=seed), avoid_collisions=True,
                         ik_link_name='tool0', timeout=SimpleNamespace(sec=0, nanosec=20_000_000))
    code, message, solution = answer(node, request)
    assert (code, message) == (1, '')
    assert list(solution.joint_state.name) == chain.joint_names and list(solution.joint_state.position) == [0.1] * 7
    sent = node.requests[0]
    assert sent.target is request.pose_stamped and sent.execute is False
    assert list(sent.seed.name) == chain.joint_names[::-1] and 'finger' not in sent.seed.name  # only chain joints
    assert sent.timeout == pytest.approx(0.02) and sent.avoid_collisions == SolveIK.Request.COLLISIONS_ON
    assert node.service_name == 'compute_ik'


def test_defaults_keep_the_nodes_parameters_and_long_timeouts_are_cut(chain):
    node = FakeNode(chain)
    answer(node, ik_request(timeout=SimpleNamespace(sec=5, nanosec=0)))
    sent = node.requests[0]
    assert sent.avoid_collisions == SolveIK.Request.COLLISIONS_DEFAULT  # false never switches checking off
    assert sent.timeout == 1.0  # max_request_timeout
    assert len(sent.seed.name) == 0  # no robot_state: the node seeds from joint_states
    answer(node, ik_request())
    assert node.requests[1].timeout == 0.0  # zero: the node's own timeout parameter


@pytest.mark.parametrize('reason, code', [('unreachable', -31), ('timeout', -6), ('unknown_frame', -21),
                                          ('collision', -12), ('invalid_input', -27), ('joint_limits', -31)])
def test_failures_map_to_moveit_codes_and_return_no_joints(chain, reason, code):
    got, message, solution = answer(FakeNode(chain, reason), ik_request())
    assert got == code and message == f'{reason}: why' and len(solution.joint_state.name) == 0


@pytest.mark.parametrize('fields, code, words', [
    ({'group_name': 'left_arm'}, -15, "group 'left_arm'"),
    ({'ik_link_name': 'link4'}, -18, "'link4' is not the chain's tip link"),
    ({'ik_link_names': ['tool0', 'other'], 'pose_stamped_vector': [1, 2]}, -18, 'one tip link'),
    ({'robot_state': SimpleNamespace(joint_state=JointState(name=['joint1'], position=[math.nan]))}, -17, 'joint1'),
    ({'robot_state': SimpleNamespace(joint_state=JointState(name=['joint1', 'joint2'], position=[0.0]))}, -17,
     '2 names and 1 positions'),
    ({'constraints': SimpleNamespace(joint_constraints=[1], position_constraints=[], orientation_constraints=[],
                                     visibility_constraints=[])}, -16, 'constraints'),
])
def test_requests_it_cannot_take_are_refused_before_solving(chain, fields, code, words):
    node = FakeNode(chain, params={'moveit_ik.group_name': 'manipulator'})
    got, message, _ = answer(node, ik_request(**fields))
    assert got == code and words in message and node.requests == []


def test_group_name_matching_and_the_single_pose_vector(chain):
    node = FakeNode(chain, params={'moveit_ik.group_name': 'manipulator'})
    pose = ik_request().pose_stamped
    pose.pose.position.y = 0.3
    code, _, _ = answer(node, ik_request(group_name='manipulator', pose_stamped_vector=[pose],
                                         ik_link_names=['tool0']))
    assert code == 1 and node.requests[0].target is pose


def test_no_model_and_no_moveit(chain):
    node = FakeNode(chain)
    node.model = None
    assert answer(node, ik_request())[0] == 99999
    plain = FakeNode(chain)
    if moveit_ik.GetPositionIK is None:
        assert moveit_ik.attach_moveit_service(plain) is None and 'moveit_msgs is not installed' in plain.logged[0]
    plain.params['moveit_ik.service_name'] = ''
    assert moveit_ik.attach_moveit_service(plain, service_type=object()) is None


def test_service_callback_fills_the_error_code(chain):
    node = FakeNode(chain, 'unreachable')
    response = SimpleNamespace(solution=SimpleNamespace(joint_state=JointState()),
                               error_code=SimpleNamespace(val=0, message='', source=''))
    service(node).on_request(SimpleNamespace(ik_request=ik_request()), response)
    assert response.error_code.val == -31 and response.error_code.message == 'unreachable: why'
    assert response.error_code.source == 'ik_solver' and 'error code -31' in node.logged[-1]


def test_compute_ik_over_dds_with_the_real_node():
    """Where moveit_msgs is installed: the node's /compute_ik answers a MoveIt client (real process, real DDS)."""
    srv = pytest.importorskip('moveit_msgs.srv', reason='moveit_msgs is not installed (not on PyPI)')
    ros_fixtures = pytest.importorskip('ros_fixtures', reason='rclpy missing')
    rclpy = ros_fixtures.rclpy
    ros_fixtures.isolate_ros_domain()
    rclpy.init()
    process = ros_fixtures.start('ros.ik_node')
    try:
        node = rclpy.create_node('moveit_client')
        client = node.create_client(srv.GetPositionIK, '/compute_ik')
        assert client.wait_for_service(timeout_sec=90.0), process.output()
        answers = {}
        for name, x in (('reachable', 0.5), ('unreachable', 1.6)):
            request = srv.GetPositionIK.Request()
            request.ik_request.pose_stamped.header.frame_id = 'base_link'
            request.ik_request.pose_stamped.pose.position.x = x
            request.ik_request.pose_stamped.pose.position.z = 0.4
            request.ik_request.pose_stamped.pose.orientation.x = 1.0
            request.ik_request.pose_stamped.pose.orientation.w = 0.0
            future = client.call_async(request)
            rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
            answers[name] = future.result()
        assert answers['reachable'].error_code.val == 1
        assert len(answers['reachable'].solution.joint_state.position) == 7
        assert answers['unreachable'].error_code.val == -31
        assert len(answers['unreachable'].solution.joint_state.name) == 0
        node.destroy_node()
    finally:
        process.stop()
        rclpy.try_shutdown()
