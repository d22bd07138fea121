"""The method comparison: near a singularity pinv asks for huge steps, DLS stays bounded; the figure is written."""
from ik_solver_demos.tools import compare_methods
import numpy as np
import pytest


def test_pinv_explodes_and_dls_stays_bounded_near_singularity(ik7):
    seed = np.array([0.0, 0.02, 0.0, -0.04, 0.0, 0.02, 0.0])
    target = ik7.fk(np.array([0.2, 0.25, 0.1, -0.5, 0.1, 0.25, 0.1]))
    _, pinv_steps, sigmas = compare_methods.trace(ik7, 'pinv', target, seed)
    dls_errors, dls_steps, _ = compare_methods.trace(ik7, 'dls', target, seed, damping=0.1)
    assert sigmas[0] < 0.05
    assert pinv_steps[0] > 5.0
    assert dls_steps.max() < 1.0 and dls_errors[-1] < 1e-8


def test_figure_is_written(tmp_path):
    pytest.importorskip('matplotlib')
    compare_methods.main(['--output-dir', str(tmp_path)])
    assert (tmp_path / 'method_comparison.png').stat().st_size > 10_000
