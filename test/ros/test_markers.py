"""RViz markers of an outcome: triads, the arm's line strip through the link origins, the failure text."""
import pathlib
from types import SimpleNamespace

from ik_solver.core.chain import load_chain
from ik_solver.core.transforms import make_pose
from ik_solver.ros.outcome import Outcome
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest
import yaml

pytest.importorskip('visualization_msgs.msg', reason='visualization_msgs is not installed')
from ik_solver.ros.markers import arm_points, MarkerPublisher, MAX_RATE, outcome_markers  # noqa: E402, I100
from visualization_msgs.msg import Marker  # noqa: E402

STAMP = SimpleNamespace(sec=0, nanosec=0)


@pytest.fixture(scope='module')
def planar3():
    return load_chain(arm_files('planar3')[0], 'base_link', 'tool0')


def planar_origins(q):
    """Return the link origins of planar3 in closed form (lengths 0.5, 0.4, 0.3 m about z), base first."""
    angles = np.cumsum(q)
    points = [np.zeros(3)]
    for length, angle in zip((0.5, 0.4, 0.3), angles):
        points.append(points[-1] + length * np.array([np.cos(angle), np.sin(angle), 0.0]))
    return np.array(points)


def xyz(point):
    return np.array([point.x, point.y, point.z])


def by_ns(markers):
    return {m.ns: m for m in markers}


def test_arm_line_strip_passes_through_the_link_origins(planar3):
    q = np.array([0.3, -0.8, 1.1])
    np.testing.assert_allclose(arm_points(planar3, q), planar_origins(q), atol=1e-12)


def test_success_draws_both_triads_and_the_arm_and_clears_the_reason(planar3):
    q = np.array([0.4, 0.5, -0.2])
    target = make_pose(planar_origins(q)[-1], [0.0, 0.0, np.sin(0.35), np.cos(0.35)])
    outcome = Outcome('topic', 'success', target=target, result=SimpleNamespace(joints=q))
    markers = by_ns(outcome_markers(outcome, planar3, STAMP, axis_length=0.1))
    assert {m.header.frame_id for m in markers.values()} == {'base_link'}
    triad = markers['target']
    assert triad.type == Marker.LINE_LIST and len(triad.points) == 6
    for axis in range(3):  # each segment starts at the target and runs 0.1 m along its own axis
        start, end = xyz(triad.points[2 * axis]), xyz(triad.points[2 * axis + 1])
        np.testing.assert_allclose(start, target[:3, 3], atol=1e-12)
        np.testing.assert_allclose(end - start, 0.1 * target[:3, axis], atol=1e-12)
    colours = [(c.r, c.g, c.b) for c in triad.colors[::2]]
    assert colours[0][0] == 1.0 and colours[1][1] > 0.5 and colours[2][2] == 1.0  # x red, y green, z blue
    reached = markers['reached']
    tip_angle = q.sum()  # planar3's tool x axis points along the summed joint angles
    np.testing.assert_allclose(xyz(reached.points[0]), planar_origins(q)[-1], atol=1e-12)
    np.testing.assert_allclose(xyz(reached.points[1]) - xyz(reached.points[0]),
                               0.08 * np.array([np.cos(tip_angle), np.sin(tip_angle), 0.0]), atol=1e-12)
    arm = markers['arm']
    assert arm.type == Marker.LINE_STRIP
    np.testing.assert_allclose([xyz(p) for p in arm.points], planar_origins(q), atol=1e-12)
    assert markers['reason'].action == Marker.DELETE


def test_failure_shows_its_reason_at_the_target(planar3):
    target = make_pose([2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0])
    q = np.zeros(3)
    outcome = Outcome('service', 'unreachable', 'target is 0.8 m beyond reach', target=target,
                      result=SimpleNamespace(joints=q))
    markers = by_ns(outcome_markers(outcome, planar3, STAMP, axis_length=0.1))
    text = markers['reason']
    assert text.type == Marker.TEXT_VIEW_FACING and text.action == Marker.ADD
    assert text.text == 'unreachable: target is 0.8 m beyond reach'
    np.testing.assert_allclose(xyz(text.pose.position), [2.0, 0.0, 0.15])
    np.testing.assert_allclose(xyz(markers['arm'].points[-1]), [1.2, 0.0, 0.0], atol=1e-12)  # the best approximation
    assert markers['arm'].color.r > markers['arm'].color.g  # failed: not the success colour


def test_refusal_without_a_solve_clears_the_arm_and_long_messages_are_cut(planar3):
    outcome = Outcome('topic', 'stale_state', 'x' * 500, target=make_pose([0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]))
    markers = by_ns(outcome_markers(outcome, planar3, STAMP))
    assert markers['reached'].action == Marker.DELETE and markers['arm'].action == Marker.DELETE
    assert len(markers['reason'].text) <= len('stale_state: ') + 120 and markers['reason'].text.endswith('...')


class FakeNode:
    """The node interface MarkerPublisher uses: model, clock, publisher, logger."""

    def __init__(self, model):
        self.model = model
        self.published = []
        self.logged = []
        self.timers = []

    def create_publisher(self, msg_type, topic, depth):
        self.topic = topic
        return SimpleNamespace(publish=self.published.append)

    def create_timer(self, period, callback):
        self.timers.append((period, callback))

    def get_clock(self):
        return SimpleNamespace(now=lambda: SimpleNamespace(to_msg=lambda: STAMP))

    def get_logger(self):
        return SimpleNamespace(debug=self.logged.append)


def test_publisher_skips_controller_events_and_results_of_another_model(planar3):
    node = FakeNode(SimpleNamespace(chain=planar3))
    publisher = MarkerPublisher(node)
    assert node.topic == '~/markers'
    publisher.on_outcome(Outcome('controller', 'success', execution='succeeded'))
    publisher.publish_latest()
    assert node.published == []
    publisher.on_outcome(Outcome('topic', 'success', target=np.eye(4), result=SimpleNamespace(joints=np.zeros(7))))
    publisher.publish_latest()
    assert node.published == [] and 'shape' in node.logged[0]  # a 7-joint result on a 3-joint chain: not drawn
    publisher.on_outcome(Outcome('topic', 'success', target=np.eye(4), result=SimpleNamespace(joints=np.zeros(3))))
    publisher.publish_latest()
    assert len(node.published) == 1 and {m.ns for m in node.published[0].markers} >= {'target', 'arm'}
    node.model = None
    publisher.on_outcome(Outcome('topic', 'success', target=np.eye(4)))
    publisher.publish_latest()
    assert len(node.published) == 1


def test_outcomes_are_only_recorded_and_the_newest_is_drawn_once_from_a_bounded_rate_timer(planar3):
    node = FakeNode(SimpleNamespace(chain=planar3))
    publisher = MarkerPublisher(node)
    (period, tick), = node.timers
    assert period >= 1.0 / MAX_RATE and tick == publisher.publish_latest
    for k in range(200):  # a 200 Hz stream for a second: nothing is built or published on its way
        publisher.on_outcome(Outcome('topic', 'success', target=make_pose([0.1 * k, 0.0, 0.0], [0, 0, 0, 1]),
                                     result=SimpleNamespace(joints=np.zeros(3))))
    assert node.published == []
    tick()
    tick()  # nothing new since: nothing published
    assert len(node.published) == 1
    target = by_ns(node.published[0].markers)['target']
    assert xyz(target.points[0])[0] == pytest.approx(19.9)  # the newest outcome's target


def test_rviz_config_shows_the_nodes_markers_and_robot():
    config = yaml.safe_load((pathlib.Path(__file__).resolve().parents[2] / 'config' / 'ik_solver.rviz').read_text())
    displays = {d['Class']: d for d in config['Visualization Manager']['Displays']}
    markers = displays['rviz_default_plugins/MarkerArray']
    assert markers['Topic']['Value'] == '/ik_solver/markers'  # ~/markers of the node named ik_solver
    assert set(markers['Namespaces']) == {'target', 'reached', 'arm', 'reason'}  # what outcome_markers draws
    assert displays['rviz_default_plugins/RobotModel']['Description Topic']['Value'] == '/robot_description'
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'base_link'
