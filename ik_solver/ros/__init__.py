"""The ROS 2 layer: the nodes and the parts they share (parameters, messages, spinning)."""
