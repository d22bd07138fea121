"""The node's collision world: the robot model, the scene file's objects and the objects added by markers.

This keeps the node's wiring to a few lines: build it with
``collision_from_parameters`` (None when the robot has no collision geometry),
feed it ``~/collision_objects`` MarkerArrays with ``apply_markers``, and hand
``world.model`` to ``IKSolver(chain, collision=...)``.  Scene-file objects are
permanent; marker objects are added, replaced (same ns/id), deleted one by one
or all at once (DELETEALL removes marker objects only).

The world holds at most ``MAX_MARKER_OBJECTS`` marker objects (``backlog``
bounds the markers waiting to be applied).  A robot whose description cannot
give any link collision geometry is told without Pinocchio (``may_have_geometry``).
"""
from xml.etree import ElementTree

from .backlog import MAX_MARKER_OBJECTS
from .markers import ADD, DELETE, DELETEALL, marker_name, obstacle_from_marker
from .model import CollisionModel
from .scene import check_placement, load_scene, SceneError


class CollisionWorld:
    """A CollisionModel plus its world objects from a scene file and from markers."""

    def __init__(self, model, scene_obstacles=()):
        self.model = model
        self.scene_obstacles = list(scene_obstacles)
        self.marker_obstacles = {}
        self.model.set_obstacles(self.scene_obstacles)

    @property
    def obstacles(self):
        """All world objects now checked (scene first, then markers)."""
        return self.model.obstacles

    def apply_markers(self, markers, lookup=None):
        """Apply a MarkerArray's markers in order; return the problems (one string per refused marker).

        ``lookup(frame) -> 4x4`` gives the transform from a frame that is not a robot link into the chain's
        base frame (e.g. from tf2), or raises / returns None when it cannot.  Objects stay where they were put
        (they are not re-transformed if that frame moves later).
        """
        problems = []
        objects = dict(self.marker_obstacles)
        for marker in markers:
            try:
                self._apply(marker, objects, lookup)
            except SceneError as exc:
                problems.append(str(exc))
        try:
            self.model.set_obstacles(self.scene_obstacles + list(objects.values()))
        except ValueError as exc:  # CollisionError: a marker named like a scene object or a robot link
            return problems + [f'marker update refused, world unchanged: {exc}']
        self.marker_obstacles = objects
        return problems

    def _apply(self, marker, objects, lookup):
        if marker.action == DELETEALL:
            objects.clear()
        elif marker.action == DELETE:
            objects.pop(marker_name(marker), None)
        elif marker.action == ADD:
            name = marker_name(marker)
            if name not in objects and len(objects) >= MAX_MARKER_OBJECTS:
                raise SceneError(f"marker '{name}': the world holds {MAX_MARKER_OBJECTS} marker objects already "
                                 '(delete some first)')
            objects[name] = self._obstacle(marker, lookup)
        else:
            raise SceneError(f"marker '{marker_name(marker)}': action {marker.action} is not ADD, DELETE or "
                             'DELETEALL')

    def _obstacle(self, marker, lookup):
        frame = marker.header.frame_id or self.model.base_link
        if self.model.knows_frame(frame):
            return obstacle_from_marker(marker, frame)
        transform = None
        if lookup is not None:
            try:
                transform = lookup(frame)
            except Exception as exc:  # tf2 raises several exception types; the marker is refused either way
                raise SceneError(f"marker '{marker_name(marker)}': frame '{frame}' unknown: {exc}") from None
        if transform is None:
            raise SceneError(f"marker '{marker_name(marker)}': frame '{frame}' is neither a robot link nor "
                             'resolvable')
        obstacle = obstacle_from_marker(marker, frame, transform, self.model.base_link)
        check_placement(f"marker '{marker_name(marker)}' in {self.model.base_link}", obstacle.pose[:3, 3])
        return obstacle


def collision_from_parameters(description, chain, srdf_file='', scene_file='', package_dirs=(), padding=0.0,
                              skip_missing_meshes=False, convex=False, xacro_args=None, robot_name=None,
                              expanded=None):
    """Build the CollisionWorld of the node's parameters, or None when the robot has no collision geometry.

    ``description``: URDF/xacro text or file (RobotModel.description, with its ``xacro_args``); ``chain``: the
    IK chain (its base and tip); ``robot_name``: the URDF's robot name, which an SRDF must carry too (another
    robot's disabled pairs would hide real collisions); ``expanded``: the URDF XML of ``description`` if the
    caller has it (RobotModel.urdf), so xacro does not run again.  Raises CollisionError or
    SceneError (both ValueError) naming the file, link or object at fault.
    """
    if srdf_file and robot_name is not None:
        _check_srdf_robot(srdf_file, robot_name)
    if not srdf_file and not may_have_geometry(expanded or description):
        return None  # (with an SRDF the model is built: it checks the SRDF's links)
    model = CollisionModel(description, chain.base_link, chain.tip_link, srdf=srdf_file or None,
                           package_dirs=package_dirs, skip_missing_meshes=skip_missing_meshes, convex=convex,
                           padding=padding, xacro_args=xacro_args, expanded=expanded)
    if not model.geometry_links:
        return None
    return CollisionWorld(model, load_scene(scene_file) if scene_file else ())


def may_have_geometry(description):
    """Tell, without Pinocchio or xacro, whether ``description`` can give any link collision geometry.

    False only when certain: the URDF/xacro text (or file) names no collision element anywhere, not even
    in a comment, and includes no other file.  Loading Pinocchio and Coal costs tens of MB and a fraction
    of a second, for a robot with nothing to check.

    Args:
        description: URDF or xacro text, or the path of such a file.

    Returns:
        True if a collision model must be built to know (an unreadable file too: building it says why).
    """
    if not isinstance(description, str):
        return True
    text = description
    if '<' not in description:
        try:
            with open(description, encoding='utf-8') as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            return True
    return 'collision' in text or 'include' in text


def _check_srdf_robot(path, robot_name):
    """Raise SceneError if the SRDF at ``path`` names another robot than ``robot_name`` (unreadable: the model says)."""
    try:
        srdf_name = ElementTree.parse(path).getroot().get('name')
    except (OSError, ElementTree.ParseError):
        return
    if srdf_name != robot_name:
        raise SceneError(f"SRDF {path} describes robot '{srdf_name}', not the URDF's '{robot_name}'")
