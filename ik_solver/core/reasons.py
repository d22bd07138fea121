"""Why a solve, request or move ended: ``Reason``, the one table of outcome codes.

The solver's reasons, the node's outcomes and the SolveIK/PlanPath response
codes are its members, and its values are the ``reason`` constants of
``ik_solver_interfaces/srv/SolveIK.srv`` (a test reads that file), in the
manner of moveit_servo's StatusCode map: one table of code, name and
meaning.  Plain Python (no numba, no ROS), so any layer may import it.
"""
from enum import IntEnum


class Reason(IntEnum):
    """Why a solve, request or move ended; ``label`` is its stable string, ``description`` says what it means."""

    def __new__(cls, value, description):
        """Make a member from its (code, description) row."""
        member = int.__new__(cls, value)
        member._value_ = value
        member.description = description
        return member

    SUCCESS = 0, 'solved (and, if asked, sent)'
    UNREACHABLE = 1, 'the target is beyond the reach of the chain'
    TIMEOUT = 2, 'no solution within the tolerance before the timeout'
    JOINT_LIMITS = 3, 'the search stalled against joint limits'
    SINGULAR = 4, 'the search stalled at a singularity'
    INVALID_INPUT = 5, 'a request, target, seed or option is malformed'
    NO_ROBOT_MODEL = 6, 'no robot model is loaded yet'
    UNKNOWN_FRAME = 7, 'the target frame is not known'
    JOINT_JUMP = 8, 'the solution would move a joint further than max_joint_jump'
    STALE_STATE = 9, 'joint_states older than joint_states_timeout, or missing'
    INCONSISTENT_STATE = 10, 'joint_states disagree with the last command beyond what the limits allow'
    COLLISION = 11, 'every solution found is in collision'
    COLLISION_PATH = 12, 'the move to the solution passes through a collision'
    OUTSIDE_WORKSPACE = 13, 'the target is outside the workspace box'
    LIMIT_VIOLATION = 14, 'the command guard refused the trajectory (limits, NaN, names)'
    SUPERSEDED = 15, 'a newer target replaced this one before it was executed'
    EXPIRED = 16, 'the target waited longer than target_timeout, or was older than max_target_age'
    CONTROLLER_UNAVAILABLE = 17, 'the controller could not take the command: nothing moved'

    @property
    def label(self):
        """Return the lower-case name: ``IKResult.reason``, the node's ``~/status`` reason and its log lines."""
        return self.name.lower()

    @classmethod
    def of(cls, reason):
        """Return the member for a Reason, its code or its label (any case); ValueError otherwise."""
        if isinstance(reason, str):
            try:
                return cls[reason.upper()]
            except KeyError:
                raise ValueError(f'unknown reason {reason!r}') from None
        return cls(reason)
