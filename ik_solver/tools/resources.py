"""Where the bundled URDFs and configs are: the installed share directory, else the source tree."""
import os
import pathlib


def share_path(*parts):
    try:
        from ament_index_python.packages import get_package_share_directory
        base = pathlib.Path(get_package_share_directory('ik_solver'))
    except Exception:  # not installed with colcon: running from the source tree
        base = pathlib.Path(__file__).resolve().parents[1]
    path = base.joinpath(*parts)
    if not path.exists():
        source = pathlib.Path(__file__).resolve().parents[1].joinpath(*parts)
        path = source if source.exists() else path
    return str(path)


BUNDLED_ARMS = {
    'ik7': ('urdf/ik7.urdf.xacro', 'config/ik7.yaml'),
    'ik6': ('urdf/ik6.urdf.xacro', 'config/ik6.yaml'),
    'planar3': ('urdf/planar3.urdf', 'config/planar3.yaml'),
}


def arm_files(name):
    """(urdf path, config path) of a bundled arm."""
    if name not in BUNDLED_ARMS:
        raise ValueError(f"unknown bundled arm '{name}'; choose one of {', '.join(BUNDLED_ARMS)}")
    urdf, config = BUNDLED_ARMS[name]
    return share_path(urdf), share_path(config)


def local_ros_env(env=None):
    """Environment for child ROS processes: discovery kept on this host."""
    env = dict(os.environ if env is None else env)
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env.setdefault('PYTHONUNBUFFERED', '1')
    return env
