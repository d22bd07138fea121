"""The servo's distance queries (collision/proximity.py) measure a bounded number of pairs and carry the rest safely.

The Panda over its table is driven by a scripted motion (the shoulder and
elbow lowering the arm): at every query at most ``max_pairs`` pairs are
measured (after the first, which measures every pair once), and each pair
reported unmeasured carries a distance no larger than its exact distance,
taken independently over the meshes by a CollisionModel.  A link with
several meshes makes several pairs of one name, so per name the k-th largest
carried distance is held to the k-th largest exact distance (implied by each
bound being below its own pair's distance).
"""
from ik_solver.collision.proximity import Proximity
from ik_solver_demos.tools import servo_collision_campaign as campaign
import numpy as np
import pytest

PERIOD = 0.002
VELOCITY = np.array([0.3, 1.0, 0.0, 0.6, 0.0, -0.5, 0.8])   # [rad/s]: shoulder and elbow lower the arm
#: Thresholds well out [m], so that many pairs are near and the budget bites.
SELF_THRESHOLD, SCENE_THRESHOLD = 0.08, 0.3
HORIZON = 0.05   # [s]


@pytest.fixture(scope='module')
def panda():
    """Return the servo's model (with the campaign's padding) and an exact one (padding 0) of the Panda and table."""
    chain, limits, model, tip = campaign.robot('panda')
    return model(campaign.PADDING), model(0.0)


def approach(proximity, truth, steps):
    """Query ``proximity`` along the scripted motion; return (pairs measured per query, (bound, exact) of carried)."""
    measured, carried = [], []
    q = campaign.STARTS['panda'].copy()
    for _ in range(steps):
        near = proximity.near(q, SELF_THRESHOLD, SCENE_THRESHOLD, VELOCITY, HORIZON)
        measured.append(proximity.measured)
        exact = exact_by_name(truth, q)
        bounds = {}
        for n in near:
            if not n.measured:
                bounds.setdefault(n.pair, []).append(n.distance)
        for pair, values in bounds.items():
            carried += zip(sorted(values, reverse=True), exact[pair])
        q = q + VELOCITY * PERIOD * 5   # a query every 5 cycles of 500 Hz
    return measured, carried


def exact_by_name(truth, q):
    """Return {pair name: exact distances [m] of its mesh pairs, largest first} at ``q``."""
    truth.pair_distances(q)   # computes every pair's distance into the world's results
    world = truth.geometry[2]
    exact = {}
    for pair, result in zip(world.pairs, world.geometry_data.distanceResults):
        exact.setdefault(pair, []).append(float(result.min_distance))
    return {pair: sorted(values, reverse=True) for pair, values in exact.items()}


def test_each_query_measures_at_most_max_pairs(panda):
    """After the first query, no query measures more than ``max_pairs``."""
    model, truth = panda
    measured, _ = approach(Proximity(model, max_pairs=2), truth, 40)
    assert measured[0] > 2   # the first query measures every near pair once: the budget is not idle
    assert max(measured[1:]) <= 2


def test_a_pair_not_measured_is_carried_below_its_distance(panda):
    """A pair left unmeasured is reported at a distance that is not larger than its exact one."""
    model, truth = panda
    _, carried = approach(Proximity(model, max_pairs=1), truth, 60)
    assert len(carried) > 20
    bound, exact = np.array(carried).T
    assert np.all(bound <= exact + 1e-9)


def test_max_pairs_must_be_positive(panda):
    """A budget of no pair would never measure anything."""
    with pytest.raises(ValueError):
        Proximity(panda[0], max_pairs=0)
