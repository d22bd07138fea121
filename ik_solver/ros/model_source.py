"""Where a node gets its robot model, and why a bad one never replaces a good one.

The model comes from the ``robot_description`` parameter text, else a URDF/xacro
file, else the latched ``robot_description`` topic.  Descriptions from the topic
are parsed on a worker thread of their own (newest wins), so a slow or hostile
description never blocks the node's executor.  A description that does not load,
or that ``on_model`` refuses (it does not fit the node's parameters), is logged
with its reason and the previous model stays in use.

Anyone may publish on the topic, so a description from it is data, never a
program: xacro in it (which reads files and environment variables, and whose
expansion the node would log and broadcast) is refused unless
``allow_topic_xacro`` says otherwise, and of the description only the robot
name leaves the node, and only when it is a plain identifier (``ROBOT_NAME``).
"""
from dataclasses import dataclass
import re
import threading

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from .compiler_pages import release_compiler_code
from ..core.chain import chain_from_robot
from ..core.exceptions import ModelError
from ..core.frames import RobotFrames
from ..core.urdf import load_robot_description, parse_robot

#: A robot name the node shows (logs, diagnostics): letters, digits and ``_ - . /``, at most 64 characters.
ROBOT_NAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_./-]{0,63}')
#: Shown instead of a robot name that is not one.
UNNAMED = '(unnamed robot)'


@dataclass(frozen=True)
class RobotModel:
    """A loaded robot: the parsed URDF, the IK chain, the frames of all its links, its source, name and URDF XML.

    ``description`` is the source as given (a path keeps relative mesh paths resolvable); ``urdf`` is its
    XML after xacro, which the collision model reads instead of running xacro (a child process) again.
    """

    robot: object
    chain: object
    frames: RobotFrames
    description: str
    name: str
    urdf: str = ''

    @classmethod
    def load(cls, source, base_link, tip_link, xacro_args=None):
        """Parse ``source`` (URDF/xacro text or path); ModelError or OSError if it is not a usable robot."""
        urdf = load_robot_description(source, xacro_args=xacro_args or None)
        robot = parse_robot(urdf)
        chain = chain_from_robot(robot, base_link, tip_link)
        return cls(robot, chain, RobotFrames(robot, base_link), source, shown_name(robot.name), urdf)


def shown_name(name):
    """Return ``name`` if it is a plain robot name (ROBOT_NAME), else UNNAMED: nothing else is repeated."""
    return name if isinstance(name, str) and ROBOT_NAME.fullmatch(name) else UNNAMED


def uses_xacro(text):
    """Tell whether xacro would process ``text`` (a namespace declaration and a macro, property or substitution)."""
    return 'xmlns:xacro' in text and ('xacro:' in text or '${' in text or '$(' in text)


class ModelSource:
    """Loads the model of ``node`` from parameter text, a file or the latched topic; see the module docstring.

    ``on_model(model)`` is called with each model that loads; if it raises
    ValueError the model is refused.  ``.model`` is the model in use (or None).
    """

    def __init__(self, node, base_link, tip_link, on_model, description='', urdf_file='', xacro_args=None,
                 topic='robot_description', allow_topic_xacro=False):
        self._node = node
        self._allow_topic_xacro = allow_topic_xacro
        self._links = (base_link, tip_link)
        self._on_model = on_model
        self._xacro_args = xacro_args
        self.model = None
        self._pending = None
        self._wake = threading.Condition()
        self._closed = False
        if description:
            self.load(description, 'the robot_description parameter')
        elif urdf_file:
            self.load(urdf_file, f'urdf_file {urdf_file}')
        else:
            node.get_logger().info(f'waiting for the robot model on the {topic} topic')
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                 reliability=ReliabilityPolicy.RELIABLE)
            node.create_subscription(String, topic, self._on_description, latched)
            self._worker = threading.Thread(target=self._work, name='model_source', daemon=True)
            self._worker.start()

    def load(self, source, origin):
        """Load ``source`` now; True if it became the model in use."""
        logger = self._node.get_logger()
        try:
            model = RobotModel.load(source, *self._links, xacro_args=self._xacro_args)
        except (ModelError, OSError, ValueError) as exc:
            logger.error(f'cannot load the robot model from {origin}: {exc}' + self._keeping())
            return False
        try:
            self._on_model(model)
        except ValueError as exc:
            logger.error(f'the robot model from {origin} does not fit the parameters: {exc}' + self._keeping())
            return False
        self.model = model
        release_compiler_code()   # the kernels the model needs are loaded: LLVM's code is not needed now
        c = model.chain
        logger.info(f"loaded robot '{model.name}', chain {c.base_link} -> {c.tip_link} from {origin}: "
                    f'{c.n} joints ({", ".join(c.joint_names)})')
        return True

    def close(self):
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _keeping(self):
        return f"; keeping the model of '{self.model.name}'" if self.model is not None else ''

    def _on_description(self, msg):
        with self._wake:
            self._pending = msg.data
            self._wake.notify()

    def _work(self):
        while True:
            with self._wake:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                text, self._pending = self._pending, None
            if uses_xacro(text) and not self._allow_topic_xacro:
                self._node.get_logger().error(
                    'a robot description on the topic uses xacro, which may read files and environment variables: '
                    'refused (publish the expanded URDF, as robot_state_publisher does, or set allow_topic_xacro)'
                    + self._keeping())
                continue
            self.load(text, 'the robot_description topic')
