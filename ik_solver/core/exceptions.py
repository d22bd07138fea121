"""Errors a robot model can raise; each message names the link or joint at fault."""


class ModelError(ValueError):
    """A robot model cannot be used for IK."""


class URDFParseError(ModelError):
    """The URDF or xacro text is not a well-formed robot description."""


class LinkNotFoundError(ModelError):
    """A named link is not in the robot."""


class ChainError(ModelError):
    """No usable serial chain between the base and the tip."""


class UnsupportedJointError(ModelError):
    """A joint type or mimic relation the solver cannot represent."""


class JointLimitError(ModelError):
    """A joint lacks the limits it needs, or they are inconsistent."""
