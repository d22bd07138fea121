"""The IK node's ``~/collision_objects``: MarkerArrays that add, replace or delete world objects.

Messages are collected (``MarkerBacklog``: a newer action on an object overtakes a waiting one) and applied
on the worker, between solves, so a solve never sees half an update; the collision variants of the context
are dropped, as they were built with the old world.  The first message builds the world if collision
checking has not (``ik_context.WorldSlot``).
"""
from ..collision.backlog import MarkerBacklog


class WorldUpdates:
    """Applies collision_objects messages to the world of ``node`` (an IKSolverNode) on its worker."""

    def __init__(self, node):
        self._node = node
        self._markers = MarkerBacklog()

    def on_message(self, msg):
        """Collect a MarkerArray; apply the waiting ones on the worker."""
        if self._markers.add(msg.markers):
            self._node.worker.post(self.apply)

    def apply(self):
        """Add, replace or delete world objects from the waiting MarkerArrays (any frame tf2 resolves into the base)."""
        node, logger = self._node, self._node.get_logger()
        markers, dropped = self._markers.take()
        if dropped:
            logger.warning(f'collision_objects: {dropped} marker actions were overtaken by newer ones before they '
                           'were applied', throttle_duration_sec=2.0)
        context = node.robot
        try:
            world = context.world('collision_objects arrived') if context is not None else None
        except ValueError as exc:
            world = None
            logger.warning(f'collision_objects: {exc}')
        if world is None:
            logger.warning('collision_objects ignored: no collision model loaded')
            return
        base = context.model.chain.base_link
        try:
            problems = world.apply_markers(
                markers, lambda frame: node.frames.lookup(base, frame, node.params['transform_timeout']))
        except Exception as exc:  # a message must never take the node down
            problems = [f'unexpected error: {exc!r}']
        for problem in problems:
            logger.warning(f'collision_objects: {problem}')
        context.variants.clear()
