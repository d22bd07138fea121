"""A MuJoCo-simulated arm behind ros2_control-like controller interfaces, for demos and tests."""
