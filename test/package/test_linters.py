"""The ament_python template's linters, run as tests (flake8 with ament's plugins, pep257)."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATHS = [str(ROOT / p) for p in ('ik_solver', 'test', 'launch', 'setup.py', 'ik_solver_demos')]


def tracked_python_files():
    """Return the Python files git tracks under PATHS; PATHS themselves outside a git checkout.

    The files a commit holds are what is linted: not the venv, build or install folders a workspace
    keeps beside them (ament_flake8's own entry point walks every folder under the working directory).
    """
    try:
        listed = subprocess.run(['git', 'ls-files', '-z', '--', *PATHS], cwd=ROOT, capture_output=True, text=True,
                                timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return PATHS
    files = [str(ROOT / name) for name in listed.split('\0') if name.endswith('.py')]
    return files or PATHS


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    ament_flake8 = pytest.importorskip('ament_flake8.main', reason='ament_flake8 is not installed')
    config = os.path.join(os.path.dirname(ament_flake8.__file__), 'configuration', 'ament_flake8.ini')
    # ament's configuration (its plugins and ignores), 120 columns instead of its 99: the numeric kernels read
    # better unwrapped.  flake8 checks the files in one process per core.
    report = ament_flake8.generate_flake8_report(config, tracked_python_files(), [], max_line_length=120)
    assert len(report.files) > 100, report.files   # the checkout's files, not an empty selection
    errors = [ament_flake8.format_error(error) for error in report.errors]
    assert not errors, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    ament_pep257 = pytest.importorskip('ament_pep257.main', reason='ament_pep257 is not installed')
    # D213 off: docstring summaries start on the first line (PEP 257 allows either), consistently.
    # D406, D407, D413 off: sections are Google style (``Args:``, ``Returns:``), not numpydoc's underlined ones.
    rc = ament_pep257.main(argv=[*PATHS, '--add-ignore', 'D213', 'D406', 'D407', 'D413'])
    assert rc == 0, 'Found code style errors / warnings'
