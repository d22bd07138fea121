"""trajectory_cdr refuses what its compiled loop cannot write (the bytes: test/ros/test_trajectory_message.py)."""
from ik_solver.motion.timing import TimedPath
from ik_solver.motion.trajectory_cdr import CDR_LE, MAX_TIME, trajectory_cdr
import numpy as np
import pytest


def _path(k=3, n=2, times=None):
    rows = np.arange(k * n, dtype=float).reshape(k, n)
    return TimedPath(np.linspace(0.1, 0.3, k) if times is None else np.asarray(times, float), rows, rows, rows)


def test_a_well_formed_path_is_written_after_the_encapsulation_header():
    data = trajectory_cdr(('a', 'b'), _path(), (5, 7))
    assert data[:4] == CDR_LE and data[4:12] == np.array([5, 7], '<u4').tobytes()


@pytest.mark.parametrize('names, path, what', [
    (('a',), _path(n=2), 'joints'),                                         # fewer names than columns
    (('a', 'b', 'c'), _path(n=2), 'joints'),
    (('a', 'b'), TimedPath(np.ones(2), *[np.ones((3, 2))] * 3), 'joints'),  # fewer times than points
    (('a', 'b'), TimedPath(np.ones(3), np.ones((3, 2)), np.ones((2, 2)), np.ones((3, 2))), 'joints'),
    (('a', 'b'), _path(times=[0.1, np.nan, 0.3]), 'finite'),
    (('a', 'b'), _path(times=[0.1, 0.2, np.inf]), 'finite'),
    (('a', 'b'), _path(times=[0.1, 0.2, MAX_TIME + 1.0]), 'finite'),
])
def test_shapes_that_do_not_match_and_times_a_duration_cannot_carry_are_refused(names, path, what):
    with pytest.raises(ValueError, match=what):
        trajectory_cdr(names, path)
