"""Where the package's bundled files are: the installed share directory, else the source tree."""
import pathlib

#: The source tree's root (a checkout), where bundled files are when the package is not installed by colcon.
SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]


def share_path(*parts):
    """Return the path of a bundled file (e.g. ``'config', 'ik7.yaml'``): installed share directory first."""
    try:
        from ament_index_python.packages import get_package_share_directory
        base = pathlib.Path(get_package_share_directory('ik_solver'))
    except Exception:  # not installed with colcon: running from the source tree
        base = SOURCE_ROOT
    path = base.joinpath(*parts)
    if not path.exists():
        source = SOURCE_ROOT.joinpath(*parts)
        path = source if source.exists() else path
    return str(path)
