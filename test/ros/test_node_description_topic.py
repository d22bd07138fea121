"""A robot description from the topic is data, never a program: no xacro unless allowed, only a plain name shown.

A description named ``$(env HOME)|${xacro.load_yaml('/etc/hostname')}|`` on the topic was expanded by xacro
and its result reached /diagnostics (hardware_id) and the log.  ModelSource is driven here with a stand-in
node: the logs it writes and the model it loads are everything the node repeats of a description.
"""
import time

from conftest import URDF_DIR
from ik_solver.core.urdf import load_robot_description
from ik_solver.ros.model_source import ModelSource, shown_name, UNNAMED, uses_xacro
import pytest
from std_msgs.msg import String

LEAKY = ('<robot name="leak" xmlns:xacro="http://www.ros.org/wiki/xacro">'
         '<xacro:property name="home" value="$(env HOME)"/>'
         '<link name="base_link"/><link name="${home}"/></robot>')


class Logger:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)

    error = warning = info


class Node:
    def __init__(self):
        self.logger = Logger()

    def get_logger(self):
        return self.logger

    def create_subscription(self, *args, **kwargs):
        return None


def _source(allow=False):
    models = []
    node = Node()
    source = ModelSource(node, 'base_link', 'tool0', models.append, allow_topic_xacro=allow)
    return source, node, models


def _publish(source, node, text, timeout=20.0):
    before = len(node.logger.lines)
    source._on_description(String(data=text))
    deadline = time.monotonic() + timeout
    while len(node.logger.lines) == before and time.monotonic() < deadline:
        time.sleep(0.01)
    return node.logger.lines[before:]


@pytest.fixture
def topic():
    source, node, models = _source()
    yield source, node, models
    source.close()


def test_xacro_on_the_topic_is_refused_and_nothing_of_it_is_logged(topic):
    source, node, models = topic
    lines = _publish(source, node, LEAKY)
    assert not models and source.model is None
    assert len(lines) == 1 and 'uses xacro' in lines[0] and 'allow_topic_xacro' in lines[0]
    assert '$(env' not in lines[0] and 'home' not in lines[0].lower().replace('allow', '')


def test_an_expanded_description_loads_as_before(topic):
    source, node, models = topic
    text = load_robot_description(str(URDF_DIR / 'ik7.urdf.xacro'))
    assert not uses_xacro(text)
    lines = _publish(source, node, text)
    assert models and source.model.name == 'ik7', lines


def test_xacro_on_the_topic_may_be_allowed():
    source, node, models = _source(allow=True)
    try:
        text = open(URDF_DIR / 'planar3.urdf').read()
        head = text.index('<robot name="planar3"') + len('<robot name="planar3"')
        text = text[:head] + ' xmlns:xacro="http://www.ros.org/wiki/xacro"' + text[head:]
        text = text.replace('</robot>', '<xacro:property name="unused" value="1"/></robot>')
        assert uses_xacro(text)
        lines = _publish(source, node, text)
        assert models and source.model.name == 'planar3', lines
    finally:
        source.close()


@pytest.mark.parametrize('name,shown', [('ik7', 'ik7'), ('panda_arm/left-1.0', 'panda_arm/left-1.0'),
                                        ("$(env HOME)|${xacro.load_yaml('/etc/hostname')}|", UNNAMED),
                                        ('a' * 65, UNNAMED), ('', UNNAMED), ('robot\nname', UNNAMED)])
def test_only_a_plain_robot_name_is_shown(name, shown):
    assert shown_name(name) == shown


def test_a_weird_name_in_plain_urdf_is_not_repeated(topic):
    source, node, models = topic
    text = load_robot_description(str(URDF_DIR / 'ik7.urdf.xacro'))
    start = text.index('<robot name="') + len('<robot name="')
    weird = text[:start] + '$(env HOME)|x|' + text[text.index('"', start):]
    lines = _publish(source, node, weird)
    assert models and source.model.name == UNNAMED and not any('$(env' in line for line in lines), lines
