"""Read a robot description from URDF or xacro text or a file.

``urdf_parser_py`` is strict about elements IK never reads (visuals, meshes,
materials, transmissions, <gazebo>, <ros2_control>), and some robot packages
ship URDFs it rejects there.  We drop those elements before handing the XML to
the parser, so a URDF loads whenever its links and joints are sound, and no
mesh file is ever opened.
"""
from contextlib import redirect_stderr
import io
import os
import xml.etree.ElementTree as ET

from urdf_parser_py import urdf

from .exceptions import URDFParseError

#: Elements IK does not use; they are removed before parsing.
IGNORED_ELEMENTS = ('visual', 'collision', 'inertial', 'material', 'transmission',
                    'gazebo', 'ros2_control', 'sensor')
KEPT_JOINT_CHILDREN = ('origin', 'parent', 'child', 'axis', 'limit', 'safety_controller', 'mimic')


def load_robot_description(source):
    """Return the URDF XML of ``source``: URDF/xacro text, or a path to a .urdf or .xacro file."""
    if not isinstance(source, str) or not source.strip():
        raise URDFParseError('robot description is empty')
    text = source
    if '<' not in source:
        if not os.path.isfile(source):
            raise URDFParseError(f'robot description file not found: {source}')
        if source.endswith('.xacro'):
            return _run_xacro(source)
        with open(source, encoding='utf-8') as f:
            text = f.read()
    if 'xmlns:xacro' in text:
        return _run_xacro_text(text)
    return text


def parse_robot(source):
    """Parse ``source`` (see load_robot_description) into a ``urdf_parser_py`` Robot."""
    text = load_robot_description(source)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFParseError(f'malformed XML in robot description: {exc}') from None
    if root.tag != 'robot':
        raise URDFParseError(f'root element is <{root.tag}>, expected <robot>')
    _strip_unused(root)
    root.set('name', root.get('name') or 'robot')
    stripped = ET.tostring(root, encoding='unicode')
    try:
        with redirect_stderr(io.StringIO()):
            robot = urdf.URDF.from_xml_string(stripped)
    except Exception as exc:  # urdf_parser_py raises bare Exceptions with a path
        raise URDFParseError(f'invalid URDF: {exc}') from None
    _mark_missing_limits(root, robot)
    return robot


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


def _strip_unused(root):
    for tag in IGNORED_ELEMENTS:
        for el in root.findall(tag):
            root.remove(el)
    for link in root.findall('link'):
        for child in list(link):
            link.remove(child)
    for joint in root.findall('joint'):
        for child in list(joint):
            if child.tag not in KEPT_JOINT_CHILDREN:
                joint.remove(child)


def _run_xacro(path):
    import xacro
    try:
        doc = xacro.process_file(path)
    except Exception as exc:
        raise URDFParseError(f'xacro failed on {path}: {exc}') from None
    return doc.toprettyxml(indent='  ')


def _run_xacro_text(text):
    import tempfile
    with tempfile.NamedTemporaryFile('w', suffix='.xacro', delete=False) as f:
        f.write(text)
    try:
        return _run_xacro(f.name)
    finally:
        os.unlink(f.name)
