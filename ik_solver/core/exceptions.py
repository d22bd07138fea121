"""Errors a robot model can raise; each message names the link or joint at fault.

They are ValueErrors so that callers who only check their inputs catch them too,
and ModelErrors so that a node can tell "this description is unusable" (keep the
previous model) from a programming error.
"""


class ModelError(ValueError):
    """A robot model cannot be used for IK."""


class URDFParseError(ModelError):
    """The URDF or xacro text is not a well-formed robot description."""


class TreeError(ModelError):
    """Links and joints do not form a tree: a cycle, two parents, a duplicate or an undeclared name."""


class ModelValueError(ModelError):
    """A number in the model (origin, axis, mimic) is missing, not finite or beyond the documented bound."""


class LinkNotFoundError(ModelError):
    """A named link is not in the robot."""


class ChainError(ModelError):
    """No usable serial chain between the base and the tip."""


class UnsupportedJointError(ModelError):
    """A joint type or mimic relation the solver cannot represent."""


class JointLimitError(ModelError):
    """A joint lacks the limits it needs, or they are inconsistent."""


class CollisionError(ModelError):
    """Collision geometry, an SRDF or a world object cannot be used; the message names the file, link or pair."""
