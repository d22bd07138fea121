"""Build of the ament_python package ik_solver_demos (colcon) and of its Python distribution (pip).

The metadata, dependencies and console scripts live in pyproject.toml; this file adds what only a
ROS install needs (the ament index marker, package.xml and the launch files) and the version, read
from package.xml so it is written in one place.
"""
from glob import glob
import pathlib
import xml.etree.ElementTree as ElementTree

from setuptools import find_packages, setup

package_name = 'ik_solver_demos'
here = pathlib.Path(__file__).resolve().parent


def package_version():
    """Return the <version> of package.xml."""
    return ElementTree.parse(here / 'package.xml').getroot().findtext('version').strip()


setup(
    name=package_name,
    version=package_version(),
    packages=find_packages(include=[package_name, package_name + '.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
    ],
    zip_safe=True,
)
