"""The clients of the demo and the benchmark stream targets without pauses of Python's garbage collector.

The observer keeps every message it sees; a full collection that walks them all stopped the demo's client
for up to a fifth of a second, long enough for the arm to cut the streamed circle's chord.
"""
import gc

from ik_solver_demos.tools.observer import without_gc_pauses
import pytest


@pytest.fixture
def collections():
    """Return the list of generations collected while the test runs (one entry per collection)."""
    seen = []

    def record(phase, info):
        if phase == 'start':
            seen.append(info['generation'])
    gc.callbacks.append(record)
    enabled = gc.isenabled()
    yield seen
    gc.callbacks.remove(record)
    gc.unfreeze()   # later tests see the collector as they found it
    (gc.enable if enabled else gc.disable)()


def _cycles(count):
    """Make ``count`` reference cycles and drop them: garbage only the collector frees."""
    for _ in range(count):
        item = []
        item.append(item)


def test_a_timed_phase_runs_no_collection_and_one_after_it(collections):
    gc.enable()
    with without_gc_pauses():
        assert not gc.isenabled()
        _cycles(50_000)            # hundreds of collections' worth of allocations
        assert collections == []
    assert gc.isenabled()
    assert 2 in collections        # the full collection after the phase freed the cycles
    assert gc.get_freeze_count() > 0   # and what survived is no longer walked


def test_a_collector_switched_off_by_the_caller_stays_off(collections):
    gc.disable()
    with without_gc_pauses():
        _cycles(1000)
    assert not gc.isenabled()
