"""Markers received and not yet applied, merged so that the work waiting is bounded.

A stream of MarkerArrays on ``~/collision_objects`` faster than the world can be
rebuilt queued without bound (821 arrays of 50 cubes in 10 s held a solve for
8.8 s).  ``MarkerBacklog`` merges the arrays that wait: the newest action per
object wins, at most ``MAX_PENDING_MARKERS`` of them, so a flood costs one world
update per turn of the node's worker, not one per array.  No Pinocchio here: the
node imports it whether or not collision checking is available.
"""
from collections import OrderedDict
import threading

from .markers import DELETEALL, marker_name

#: Marker objects the world may hold beside the scene file's (each is checked at every collision-aware iteration).
MAX_MARKER_OBJECTS = 1000
#: Marker actions that may wait to be applied; beyond it the oldest are dropped (the newest win).
MAX_PENDING_MARKERS = 2 * MAX_MARKER_OBJECTS


class MarkerBacklog:
    """Markers received and not yet applied, merged: applying ``take()`` equals applying them all in order.

    Per object only the newest action counts (ADD replaces, DELETE removes); a DELETEALL drops every action
    before it and is applied first.  Thread-safe: the subscription adds, the worker takes.
    """

    def __init__(self, limit=MAX_PENDING_MARKERS):
        self._limit = limit
        self._lock = threading.Lock()
        self._clear = None            # the newest DELETEALL marker, applied before the others
        self._markers = OrderedDict()  # name -> newest marker, oldest first
        self._dropped = 0

    def add(self, markers):
        """Merge ``markers`` (a MarkerArray's, in order); return True if the backlog was empty before."""
        with self._lock:
            was_empty = self._clear is None and not self._markers
            for marker in markers:
                if marker.action == DELETEALL:
                    self._clear = marker
                    self._dropped += len(self._markers)
                    self._markers.clear()
                    continue
                name = marker_name(marker)
                self._markers.pop(name, None)
                self._markers[name] = marker
            while len(self._markers) > self._limit:
                self._markers.popitem(last=False)
                self._dropped += 1
            return was_empty

    def take(self):
        """Return (markers to apply, in order; number of actions that were overtaken or dropped) and empty it."""
        with self._lock:
            markers = ([self._clear] if self._clear is not None else []) + list(self._markers.values())
            dropped, self._dropped = self._dropped, 0
            self._clear = None
            self._markers = OrderedDict()
        return markers, dropped
