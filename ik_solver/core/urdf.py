"""Read a robot description from URDF or xacro text or a file, and refuse any model that is not sound.

``urdf_parser_py`` is strict about elements IK never reads (visuals, meshes,
materials, transmissions, <gazebo>, <ros2_control>), and some robot packages
ship URDFs it rejects there.  We drop those elements before handing the XML to
the parser, so a URDF loads whenever its links and joints are sound, and no
mesh file is ever opened.

urdf_parser_py is also lenient where a robot would be hurt: it accepts cycles,
duplicate names, joints to undeclared links and NaN numbers.  A description may
come from a topic, so every model is checked here before any consumer walks it:
its size is bounded before it is parsed (characters, XML tags, links, joints),
links and joints must form a tree (every walk up a parent chain ends), and every
number the kinematics read (origins, movable axes, mimic factors) must be finite
and within ``MAX_MAGNITUDE``.  Joint limits are checked where they are read, for
the joints of the IK chain (``chain.py``), so a gripper joint with a sloppy
``<limit>`` outside the chain does not block the arm.  xacro runs in a child
process bounded in time and memory.  Every refusal is a ``ModelError`` naming
the joint, link or bound.
"""
from contextlib import redirect_stderr
import io
import json
import math
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
from urdf_parser_py import urdf

from .exceptions import ModelError, ModelValueError, TreeError, URDFParseError
from .transforms import rpy_to_matrix

#: Elements IK does not use; they are removed before parsing.
IGNORED_ELEMENTS = ('visual', 'collision', 'inertial', 'material', 'transmission',
                    'gazebo', 'ros2_control', 'sensor')
KEPT_JOINT_CHILDREN = ('origin', 'parent', 'child', 'axis', 'limit', 'safety_controller', 'mimic')
MOVABLE_TYPES = ('revolute', 'continuous', 'prismatic')
#: Bound on every length (m), angle (rad), joint limit, velocity limit and mimic factor the model gives.
#: Real arms stay far inside it (10 km, 1600 turns); beyond it a value is a typo or an attack (1e300 overflows
#: squared errors).  It admits the velocity 10000 that some shipped URDFs use as "unlimited" (Baxter, Solo):
#: the motion layer's joint_limits file must then give the real limit.
MAX_MAGNITUDE = 1e4
#: Longest robot description accepted (characters) and most XML tags, so that parsing stays well under a
#: second.  Real descriptions are tens to hundreds of kB with a few thousand elements.
MAX_DESCRIPTION_CHARS = 4 * 2 ** 20
MAX_XML_TAGS = 50_000
MIN_AXIS_NORM = 1e-9
#: Most links (and most joints) a robot may have: about ten times a humanoid with hands, and few enough that
#: parsing and checking stay well under a second.
MAX_ELEMENTS = 1000
#: xacro evaluates Python expressions (``${9**9**9}`` never ends), so it runs in a child process bounded by
#: CPU time (seconds), not by the clock: on a loaded host a real description may wait seconds for a core, and
#: must still load.  The wall-clock timeout [s] only catches a child that waits without computing.  Its
#: address space is bounded too.  A plain URDF (what robot_state_publisher publishes) is parsed in-process,
#: well within a second.
XACRO_CPU = 5.0
XACRO_TIMEOUT = 60.0
XACRO_MEMORY = 2 ** 30


def load_robot_description(source, xacro_args=None):
    """Return the URDF XML of ``source``: URDF/xacro text, or a path to a .urdf or .xacro file.

    ``xacro_args`` ({name: value}) are the xacro arguments (``$(arg name)``), as ``name:=value`` on
    the xacro command line; a plain URDF has none and ignores them.
    """
    mappings = _xacro_mappings(xacro_args)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise URDFParseError(f'robot description must be URDF/xacro text or a file path, got {type(source).__name__}')
    if not source.strip():
        raise URDFParseError('robot description is empty')
    if '<' not in source:
        text = _read_file(source)
        if source.endswith('.xacro') or _uses_xacro(text):
            return _checked_size(_run_xacro(source, mappings), f'xacro output of {source}')
        return text
    _checked_size(source, 'robot description')
    if _uses_xacro(source):
        return _checked_size(_run_xacro_text(source, mappings), 'xacro output')
    return source


def _uses_xacro(text):
    """Whether xacro would change ``text``: many shipped .urdf files declare xmlns:xacro and use none of it."""
    return 'xmlns:xacro' in text and ('xacro:' in text or '${' in text or '$(' in text)


def parse_robot(source, xacro_args=None):
    """Parse ``source`` (see load_robot_description) into a checked ``urdf_parser_py`` Robot."""
    root = _parse_xml(load_robot_description(source, xacro_args))
    if root.tag != 'robot':
        raise URDFParseError(f'root element is <{root.tag}>, expected <robot>')
    _check_joint_elements(root)
    _strip_unused(root)
    root.set('name', root.get('name') or 'robot')
    stripped = ET.tostring(root, encoding='unicode')
    try:
        with redirect_stderr(io.StringIO()):
            robot = urdf.URDF.from_xml_string(stripped)
    except Exception as exc:  # urdf_parser_py raises bare Exceptions with a path
        raise URDFParseError(f'invalid URDF: {exc}') from None
    _mark_missing_limits(root, robot)
    check_robot(robot)
    return robot


def check_robot(robot):
    """Refuse a model that is not a tree or has unusable numbers; return {child link: parent joint}."""
    parent_joint = check_tree(robot)
    for joint in robot.joints:
        check_joint_values(joint)
    return parent_joint


def check_tree(robot):
    """Refuse links and joints that do not form a tree (see TreeError); return {child link: parent joint}."""
    links = _unique_names(robot.links, 'link')
    _unique_names(robot.joints, 'joint')
    parent_joint = {}
    for joint in robot.joints:
        for role in ('parent', 'child'):
            link = getattr(joint, role)
            if link not in links:
                raise TreeError(f"joint '{joint.name}' has {role} link '{link}', which is not declared")
        if joint.child in parent_joint:
            raise TreeError(f"link '{joint.child}' has two parent joints: '{parent_joint[joint.child].name}' "
                            f"and '{joint.name}'")
        parent_joint[joint.child] = joint
    _check_acyclic(parent_joint)
    return parent_joint


def _unique_names(elements, kind):
    names = set()
    for element in elements:
        name = element.name
        if not isinstance(name, str) or not name.strip():
            raise TreeError(f'a {kind} has an empty name')
        if name in names:
            raise TreeError(f"{kind} name '{name}' is declared more than once")
        names.add(name)
    return names


def _check_acyclic(parent_joint):
    """Walk up from every link; each walk must reach a root.  O(links): finished walks are remembered."""
    rooted = set()
    for start in parent_joint:
        walk, on_walk, link = [], set(), start
        while link in parent_joint and link not in rooted:
            if link in on_walk:
                cycle = walk[walk.index(link):]
                joints = ', '.join(f"'{parent_joint[name].name}'" for name in cycle)
                links = ', '.join(f"'{name}'" for name in cycle)
                raise TreeError(f'joints {joints} form a cycle through links {links}')
            walk.append(link)
            on_walk.add(link)
            link = parent_joint[link].parent
        rooted.update(walk)


def check_joint_values(joint):
    """Refuse non-finite or out-of-bound origin, movable axis and mimic numbers of ``joint``, naming them."""
    if joint.origin is not None:
        check_numbers(joint.origin.xyz, f"joint '{joint.name}' <origin xyz>", ModelValueError)
        check_numbers(joint.origin.rpy, f"joint '{joint.name}' <origin rpy>", ModelValueError)
    if joint.type in MOVABLE_TYPES and joint.axis is not None:
        axis = check_numbers(joint.axis, f"joint '{joint.name}' <axis xyz>", ModelValueError)
        if math.hypot(*axis) < MIN_AXIS_NORM:
            raise ModelValueError(f"joint '{joint.name}' has a zero <axis xyz> {axis}")
    if joint.mimic is not None:  # its master is checked by the chain, where it matters (shipped hands dangle)
        for key in ('multiplier', 'offset'):
            check_numbers(getattr(joint.mimic, key), f"joint '{joint.name}' <mimic {key}>", ModelValueError)


def check_numbers(values, what, error, low=-MAX_MAGNITUDE, high=MAX_MAGNITUDE):
    """Return ``values`` (a number or a sequence) as floats, all finite and within [low, high].

    Otherwise raise ``error`` naming ``what``.  ``None`` (an attribute the URDF leaves out) passes as [].
    Plain Python, not numpy: it runs a few times per joint of every model.
    """
    if values is None:
        return []
    numbers = [float(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
    if not all(math.isfinite(v) for v in numbers):
        raise error(f'{what} is not finite: {_show(numbers)}')
    if not all(low <= v <= high for v in numbers):
        raise error(f'{what} is {_show(numbers)}, outside [{low:g}, {high:g}]')
    return numbers


def joint_origin(joint):
    """Return (R, p) of a joint's <origin>: its child frame in its parent frame at zero position."""
    if joint.origin is None:
        return np.eye(3), np.zeros(3)
    xyz = joint.origin.xyz if joint.origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = joint.origin.rpy if joint.origin.rpy is not None else [0.0, 0.0, 0.0]
    return rpy_to_matrix(rpy), np.array(xyz, dtype=float)


def joint_axis(joint):
    """Return the unit axis of a movable joint; URDF's default is x (check_robot refused zero and non-finite ones)."""
    axis = np.array(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], dtype=float)
    return axis / np.linalg.norm(axis)


def _show(numbers):
    return numbers[0] if len(numbers) == 1 else numbers


def _mark_missing_limits(root, robot):
    """urdf_parser_py reads an absent lower/upper as 0; mark it None so the chain can refuse it."""
    missing = {}
    for joint in root.findall('joint'):
        limit = joint.find('limit')
        if limit is not None:
            missing[joint.get('name')] = [k for k in ('lower', 'upper') if k not in limit.attrib]
    for joint in robot.joints:
        for key in missing.get(joint.name, ()):
            setattr(joint.limit, key, None)


def _parse_xml(text):
    """Parse ``text`` into an ElementTree, refusing more than MAX_XML_TAGS tags before building any tree.

    Counting '<' is a C-speed upper bound on elements (each has one or two tags); a deep nesting is harmless
    because everything IK does not read is cut before any recursive walk.  expat refuses entity bombs and
    external entities itself.
    """
    tags = text.count('<')
    if tags > MAX_XML_TAGS:
        raise URDFParseError(f'robot description has {tags} XML tags, more than {MAX_XML_TAGS}')
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFParseError(f'malformed XML in robot description: {exc}') from None


def _strip_unused(root):
    """Keep links (empty) and joints with the children IK reads (themselves empty): at most three levels."""
    root[:] = [element for element in root if element.tag in ('link', 'joint')]   # one pass: remove() is O(n)
    for element in root:
        element[:] = [] if element.tag == 'link' else [child for child in element if child.tag in KEPT_JOINT_CHILDREN]
        for child in element:
            child[:] = []


def _check_joint_elements(root):
    """Refuse what urdf_parser_py would silently resolve: a repeated element, a <parent/> without a link."""
    for tag in ('link', 'joint'):
        count = len(root.findall(tag))
        if count > MAX_ELEMENTS:
            raise URDFParseError(f'robot has {count} {tag}s, more than {MAX_ELEMENTS}')
    for joint in root.findall('joint'):
        name = joint.get('name')
        for tag in KEPT_JOINT_CHILDREN:
            count = len(joint.findall(tag))
            if count > 1:
                raise URDFParseError(f"joint '{name}' has {count} <{tag}> elements, expected at most one")
        for tag in ('parent', 'child'):
            element = joint.find(tag)
            if element is not None and not (element.get('link') or '').strip():
                raise URDFParseError(f"joint '{name}' has a <{tag}> without a link name")


def _xacro_mappings(xacro_args):
    if xacro_args is None:
        return {}
    if not isinstance(xacro_args, dict):
        raise ModelError(f'xacro_args must be a dict of name -> value, got {type(xacro_args).__name__}')
    for name, value in xacro_args.items():
        if not isinstance(name, str) or not name or not isinstance(value, (str, int, float, bool)):
            raise ModelError(f'xacro argument {name!r}: names must be non-empty strings and values strings '
                             f'or numbers, got {value!r}')
    return {name: str(value) for name, value in xacro_args.items()}


def _read_file(path):
    if not os.path.isfile(path):
        raise URDFParseError(f'robot description file not found: {path}')
    if os.path.getsize(path) > MAX_DESCRIPTION_CHARS:
        raise URDFParseError(f'robot description file {path} is larger than {MAX_DESCRIPTION_CHARS} bytes')
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise URDFParseError(f'cannot read robot description file {path}: {exc}') from None


def _checked_size(text, what):
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise URDFParseError(f'{what} is longer than {MAX_DESCRIPTION_CHARS} characters')
    return text


def _run_xacro(path, mappings):
    return _xacro_child({'path': path, 'text': None, 'mappings': mappings}, path)


def _run_xacro_text(text, mappings):
    """Expand xacro text; relative includes resolve against the working directory."""
    return _xacro_child({'path': None, 'text': text, 'mappings': mappings}, 'the robot description text')


def _xacro_child(request, what):
    """Run xacro in a child process bounded in time and memory: its ``${...}`` are Python expressions."""
    command = [sys.executable, '-c', _XACRO_CHILD, str(XACRO_MEMORY), str(MAX_DESCRIPTION_CHARS), _ERROR_MARK,
               str(max(1, math.ceil(XACRO_CPU)))]
    try:
        done = subprocess.run(command, input=json.dumps(request), capture_output=True, text=True,
                              timeout=XACRO_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise URDFParseError(f'xacro did not finish within {XACRO_TIMEOUT:g} s on {what}') from None
    if -done.returncode in (signal.SIGXCPU, signal.SIGKILL):
        raise URDFParseError(f'xacro used more than {max(1, math.ceil(XACRO_CPU))} s of CPU on {what}')
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f'exit code {done.returncode}']
        errors = [line[len(_ERROR_MARK):] for line in lines if line.startswith(_ERROR_MARK)]
        raise URDFParseError(f'xacro failed on {what}: {(errors or lines)[-1]}')
    return done.stdout


_ERROR_MARK = 'xacro-error: '
#: The child: bound its memory, expand, print the URDF, or print one marked error line.
_XACRO_CHILD = """
import json, sys
memory, max_chars, mark, cpu = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU's default action would dump core
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU at cpu s, SIGKILL a second later
except (ImportError, ValueError, OSError):  # not POSIX, or a lower hard limit: the timeout still holds
    pass
request = json.loads(sys.stdin.read())
try:
    import xacro
    if request['path'] is not None:
        doc = xacro.process_file(request['path'], mappings=request['mappings'])
    else:
        xacro.init_stacks(None)
        doc = xacro.parse(request['text'])
        xacro.process_doc(doc, mappings=request['mappings'])
    text = doc.toprettyxml(indent='  ')
    if len(text) > max_chars:
        raise ValueError(f'output is longer than {max_chars} characters')
except BaseException as exc:
    message = ' '.join(str(exc).split()) or type(exc).__name__
    sys.stderr.write('\\n' + mark + message + '\\n')
    sys.exit(1)
sys.stdout.write(text)
"""
