"""A trajectory_msgs/JointTrajectory as the CDR bytes the middleware sends, written from arrays, without ROS.

rclpy converts a message into its C form field by field, and building the message costs as much again:
for a streamed move of 70 points about 0.6 ms of a node's time per target.  ``trajectory_cdr`` writes the
little-endian CDR (XCDR1) of the same message straight from a TimedPath: the header and joint names once
per joint list, the points by one compiled loop.  A publisher sends the bytes as they are
(``Publisher.publish`` takes serialized messages); test/ros/test_trajectory_message.py checks that rclpy
deserializes them into the message the generated constructors build.
"""
import functools
import struct

from numba import njit
import numpy as np

from .timing import TimedPath

#: The encapsulation header of little-endian plain CDR; alignment counts from the end of it.
CDR_LE = b'\x00\x01\x00\x00'
#: The range of time_from_start [s] a Duration (int32 seconds) carries.
MAX_TIME = 2.0 ** 31 - 1.0


def trajectory_cdr(names, path, stamp=(0, 0)):
    """Return the CDR of the JointTrajectory of ``path`` (see ``ros.messages.trajectory_message``).

    Args:
        names: the joint names of ``path``'s columns.
        path: TimedPath; times [s] from the start, positions [rad or m], velocities and accelerations
            (K, n); its last point is written at rest (zero velocities and accelerations).
        stamp: header.stamp as (sec, nanosec); (0, 0): the controller starts it on arrival.

    Returns:
        bytes: the serialized message, encapsulation header first.

    Raises:
        ValueError: arrays whose shapes do not match ``names`` or each other, or times not finite or beyond
            what a Duration carries.
    """
    times, positions, velocities, accelerations = _checked(len(names), path)
    head = struct.pack('<iI', *stamp) + _cdr_head(tuple(names))
    body = _cdr_points(len(head), times, positions, velocities, accelerations)
    return b''.join((CDR_LE, head, body.tobytes()))


def warm_up():
    """Load the compiled loop (numba, from the motion kernels' cache) so a node's first command is on time."""
    one = np.ones((1, 1))
    trajectory_cdr(('j',), TimedPath(np.ones(1), one, one, one))


def _checked(n, path):
    """Return the path's arrays, contiguous float64; ValueError for shapes or times the loop cannot write."""
    times = np.ascontiguousarray(path.times, float)
    fields = (path.positions, path.velocities, path.accelerations)
    arrays = [np.ascontiguousarray(values, float) for values in fields]
    if times.ndim != 1 or any(values.shape != (len(times), n) for values in arrays):
        raise ValueError(f'a trajectory of {n} joints needs times (K,) and (K, {n}) positions, velocities and '
                         f'accelerations, got {times.shape} and {[values.shape for values in arrays]}')
    if not np.all(np.abs(times) <= MAX_TIME):   # NaN fails too
        raise ValueError(f'times from the start must be finite and within +-{MAX_TIME:.0f} s')
    return times, *arrays


@functools.lru_cache(maxsize=16)
def _cdr_head(names):
    """Return the CDR of a trajectory's header after its stamp (an empty frame_id) and its joint names.

    It starts 8 bytes into the payload, after the stamp, which its alignment counts.
    """
    out = bytearray(8)
    _cdr_string(out, '')   # header.frame_id
    _cdr_uint32(out, len(names))
    for name in names:
        _cdr_string(out, name)
    return bytes(out[8:])


@njit(cache=True)
def _cdr_points(offset, times, positions, velocities, accelerations):
    """Return the CDR of the points sequence (its count first) that starts ``offset`` bytes into the payload.

    A point: positions, velocities and accelerations (each a uint32 count, 4-aligned, then n doubles,
    8-aligned), an empty effort sequence and time_from_start (int32 sec, uint32 nanosec; times [s] rounded
    to whole nanoseconds).  The last point is written at rest (zero velocities and accelerations).
    """
    k, n = positions.shape
    buffer = np.zeros((offset + 8 + k * (3 * (8 + 8 * n) + 16)) // 8 + 1, np.float64)  # doubles: 8-aligned
    words = buffer.view(np.uint32)
    at = offset + (-offset) % 4
    words[at // 4] = k
    at += 4
    for i in range(k):
        for field in range(3):
            at += (-at) % 4
            words[at // 4] = n
            at += 4
            at += (-at) % 8
            for j in range(n):
                if field == 0:
                    buffer[at // 8 + j] = positions[i, j]
                elif i < k - 1:
                    buffer[at // 8 + j] = velocities[i, j] if field == 1 else accelerations[i, j]
            at += 8 * n
        at += (-at) % 4 + 4   # effort: count 0
        nanoseconds = np.int64(np.rint(times[i] * 1e9))
        words[at // 4] = np.uint32(nanoseconds // 1_000_000_000 & 0xFFFFFFFF)   # int32 in two's complement
        words[at // 4 + 1] = np.uint32(nanoseconds % 1_000_000_000)
        at += 8
    return buffer.view(np.uint8)[offset:at]


def _cdr_uint32(out, value):
    out += bytes(-len(out) % 4)
    out += struct.pack('<I', value)


def _cdr_string(out, text):
    data = text.encode() + b'\0'
    _cdr_uint32(out, len(data))
    out += data
