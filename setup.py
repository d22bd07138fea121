from glob import glob

from setuptools import find_packages, setup

package_name = 'ik_solver'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml') + glob('config/*.srdf') + glob('config/*.rviz')),
        ('share/' + package_name + '/urdf', glob('urdf/*.urdf') + glob('urdf/*.xacro')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='ik_solver developers',
    maintainer_email='ik-solver@example.com',
    description='Jacobian inverse kinematics node, SolveIK and GetPositionIK services, servo node and simulated arm '
                'for ROS 2.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'ik_solver_node = ik_solver.ros.entry:ik_solver_node',
            'sim_arm_node = ik_solver.ros.entry:sim_arm_node',
            'ik_demo = ik_solver.tools.demo:main',
            'ik_bench = ik_solver.tools.bench:main',
            'ik_bench_node = ik_solver.tools.bench_node:main',
            'ik_compare_methods = ik_solver.tools.compare_methods:main',
            'ik_servo_node = ik_solver.ros.entry:ik_servo_node',
            'ik_servo_demo = ik_solver.tools.servo_demo:main',
            'ik_collision_matrix = ik_solver.tools.collision_matrix:main',
            'ik_bench_collision = ik_solver.tools.bench_collision:main',
        ],
    },
)
