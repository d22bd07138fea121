"""Write the SRDF of a robot's disabled self-collision pairs (adjacent, always, never), like MoveIt Setup Assistant.

    python -m ik_solver_demos.tools.collision_matrix urdf/ik7.urdf.xacro -o config/ik7.srdf
    python -m ik_solver_demos.tools.collision_matrix panda.urdf --package-dir /opt/share --samples 20000 -o panda.srdf

Without --base/--tip every joint of the robot is sampled; with them only the
chain's joints move and the others stay at 0 (within their limits).
"""
import argparse
import sys

from ik_solver.collision.matrix import compute_matrix
from ik_solver.collision.model import CollisionModel
from ik_solver.core.exceptions import ModelError
import numpy as np


def main(argv=None):
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        xacro_args = dict(_xacro_arg(a) for a in args.xacro_arg)
        model = CollisionModel(args.urdf, args.base, args.tip, package_dirs=args.package_dir,
                               skip_missing_meshes=args.skip_missing_meshes, xacro_args=xacro_args or None)
        matrix = compute_matrix(model, args.samples, args.always_fraction, np.random.default_rng(args.seed))
    except (ModelError, ValueError) as exc:
        print(f'collision_matrix: {exc}', file=sys.stderr)
        return 1
    for note in model.notes:
        print(f'collision_matrix: {note}', file=sys.stderr)
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(matrix.srdf())
    else:
        sys.stdout.write(matrix.srdf())
    print(matrix.summary() + (f'; written to {args.output}' if args.output else ''), file=sys.stderr)
    return 0


def _parser():
    parser = argparse.ArgumentParser(prog='python -m ik_solver_demos.tools.collision_matrix',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('urdf', help='URDF or xacro file')
    parser.add_argument('--base', help='base link of the chain to sample (default: the whole robot)')
    parser.add_argument('--tip', help='tip link of the chain to sample')
    parser.add_argument('-o', '--output', help='SRDF file to write (default: standard output)')
    parser.add_argument('--samples', type=int, default=10000, help='random configurations (default 10000)')
    parser.add_argument('--always-fraction', type=float, default=0.95,
                        help='a pair colliding in at least this fraction of samples is "Always" (default 0.95)')
    parser.add_argument('--seed', type=int, default=None, help='random seed (default: random)')
    parser.add_argument('--package-dir', action='append', default=[],
                        help='directory holding packages for package:// meshes (repeatable)')
    parser.add_argument('--skip-missing-meshes', action='store_true', help='drop the geometry of links whose '
                        'meshes are missing instead of failing')
    parser.add_argument('--xacro-arg', action='append', default=[], metavar='NAME:=VALUE', help='xacro argument')
    return parser


def _xacro_arg(text):
    name, sep, value = text.partition(':=')
    if not sep or not name:
        raise ValueError(f'xacro argument must be NAME:=VALUE, got {text!r}')
    return name, value


if __name__ == '__main__':
    sys.exit(main())
