"""Solve one hard target with transpose, pinv, dls and adaptive_dls and draw how each behaves.

The seed is the ik7 arm nearly straight up (a singular pose) and the target a
little bent pose 0.1 m away: the pseudo-inverse's 1/sigma gain asks for huge
steps, DLS's sigma / (sigma^2 + lambda^2) (lambda = 0.1) stays bounded.

    python -m ik_solver_demos.tools.compare_methods --output-dir demo_output
"""
import argparse
import os

from ik_solver.core import methods
from ik_solver.core.chain import load_chain
from ik_solver.core.kernel_data import StepGains
from ik_solver.core.solver import rotation_error
import numpy as np

from .resources import arm_files

COMPARED = ('transpose', 'pinv', 'dls', 'adaptive_dls')


def trace(chain, method, target, seed, iterations=60, max_step=0.5, damping=0.1):
    """Run one method from the seed without restarts: (errors, requested steps, sigma_min) per iteration.

    The step a method asks for is recorded before the solver's step clamp is applied.
    """
    gains = StepGains(alpha=0.0, damping=float(damping), damping_max=float(damping), epsilon=0.1, cutoff=1e-6,
                      lm_bias=1e-5)
    mid = methods.method_id(method)
    q = seed.copy()
    errors, steps, sigmas = [], [], []
    for _ in range(iterations):
        T = chain.fk(q)
        e = np.concatenate([target[:3, 3] - T[:3, 3], rotation_error(np.ascontiguousarray(target[:3, :3]),
                                                                     np.ascontiguousarray(T[:3, :3]))])
        J = chain.jacobian(q)
        dq = methods.step(mid, J, e, gains)
        errors.append(np.linalg.norm(e))
        steps.append(np.abs(dq).max())
        sigmas.append(np.linalg.svd(J, compute_uv=False)[-1])
        dq *= min(1.0, max_step / max(np.abs(dq).max(), 1e-300))
        q = np.clip(q + dq, chain.lower, chain.upper)
    return np.array(errors), np.array(steps), np.array(sigmas)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--output-dir', default='demo_output')
    args = parser.parse_args(argv)
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
    seed = np.array([0.0, 0.02, 0.0, -0.04, 0.0, 0.02, 0.0])    # nearly straight up: singular
    q_goal = np.array([0.2, 0.25, 0.1, -0.5, 0.1, 0.25, 0.1])   # a little bent, 0.1 m away
    target = chain.fk(q_goal)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    print(f"{'method':<14} {'final error':>12} {'largest step [rad]':>19}")
    for method in COMPARED:
        errors, steps, sigmas = trace(chain, method, target, seed)
        axes[0].semilogy(errors, label=method)
        axes[1].semilogy(steps, label=method)
        print(f'{method:<14} {errors[-1]:12.2e} {steps.max():19.3f}')
    axes[0].set(xlabel='iteration', ylabel='|e| (m and rad)', title='Task error per iteration')
    axes[1].set(xlabel='iteration', ylabel='largest joint step asked [rad]',
                title='Joint step per iteration (before the 0.5 rad clamp)')
    for ax in axes[:2]:
        ax.legend()
    sigma = np.logspace(-3, 0, 300)
    ax = axes[2]
    ax.loglog(sigma, 1 / sigma, 'k', lw=2, label='pinv: 1/sigma')
    for lam in (0.01, 0.05, 0.1, 0.3):
        ax.loglog(sigma, sigma / (sigma ** 2 + lam ** 2), label=f'DLS, lambda = {lam}')
    ax.set(xlabel='singular value sigma', ylabel='gain on u^T e', ylim=(1e-2, 1e3),
           title='Step gain: 1/sigma vs sigma/(sigma^2 + lambda^2)')
    ax.legend()
    fig.tight_layout()
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.abspath(os.path.join(args.output_dir, 'method_comparison.png'))
    fig.savefig(path, dpi=110)
    print(f'figure written to {path}')


if __name__ == '__main__':
    main()
