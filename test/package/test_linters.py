"""The ament_python template's linters, run as tests (flake8 with ament's plugins, pep257)."""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATHS = [str(ROOT / p) for p in ('ik_solver', 'test', 'launch', 'setup.py', 'ik_solver_demos')]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    main_with_errors = pytest.importorskip('ament_flake8.main', reason='ament_flake8 is not installed')
    # 120 columns instead of ament's 99: the numeric kernels read better unwrapped.
    rc, errors = main_with_errors.main_with_errors(argv=['--linelength', '120', *PATHS])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    ament_pep257 = pytest.importorskip('ament_pep257.main', reason='ament_pep257 is not installed')
    # D213 off: docstring summaries start on the first line (PEP 257 allows either), consistently.
    # D406, D407, D413 off: sections are Google style (``Args:``, ``Returns:``), not numpydoc's underlined ones.
    rc = ament_pep257.main(argv=[*PATHS, '--add-ignore', 'D213', 'D406', 'D407', 'D413'])
    assert rc == 0, 'Found code style errors / warnings'
