"""Map the IK chain's joint vector to a full Pinocchio configuration of the whole robot.

The collision model covers every link of the robot, not only the chain's.  Its
1-DoF joints get a value that is affine in the chain's q: chain joints copy
their variable, mimic joints (in or outside the chain) follow their master as
``multiplier * master + offset``, and every other joint is held at a given
value (default 0 clipped into its limits).  Pinocchio stores continuous joints
as (cos, sin); joints with more than one DoF stay at Pinocchio's neutral.
"""
import numpy as np

from ..core.exceptions import CollisionError


class ConfigurationMap:
    """``full(q)``: the Pinocchio configuration of the robot at chain configuration ``q``."""

    def __init__(self, model, robot, joint_names=None):
        """Map ``joint_names`` (the chain's, in order; default: every 1-DoF joint that is not a mimic joint)."""
        import pinocchio
        self._neutral, self._nv = pinocchio.neutral(model), model.nv
        self._mimic = {j.name: j.mimic for j in robot.joints if j.mimic is not None}
        self._rows, self._default, self.ranges, single, cos_sin, self._idx_v = {}, {}, {}, [], [], []
        for index in range(1, model.njoints):
            joint, name = model.joints[index], model.names[index]
            if joint.nv != 1:
                continue
            row = len(self._rows)
            self._rows[name] = row
            self._idx_v.append(joint.idx_v)
            self._default[name], self.ranges[name] = 0.0, (-np.pi, np.pi)
            if joint.nq == 1:
                single.append((row, joint.idx_q))
                low, high = model.lowerPositionLimit[joint.idx_q], model.upperPositionLimit[joint.idx_q]
                if np.isfinite(low) and np.isfinite(high) and low <= high:
                    self._default[name], self.ranges[name] = float(np.clip(0.0, low, high)), (low, high)
            else:
                cos_sin.append((row, joint.idx_q))
        variables = [n for n in self._rows if n not in self._mimic]
        self._joint_names = variables if joint_names is None else list(joint_names)
        self._single = np.array(single, dtype=int).reshape(-1, 2)
        self._cos_sin = np.array(cos_sin, dtype=int).reshape(-1, 2)
        missing = [name for name in self._joint_names if name not in self._rows]
        if missing:
            raise CollisionError(f'chain joints {missing} are not 1-DoF joints of the collision model')
        self.held_joints = [n for n in self._rows if n not in self._joint_names and n not in self._mimic]
        self.set_held({})

    @property
    def joint_names(self):
        """Return the joints of q, in order."""
        return list(self._joint_names)

    def set_held(self, values):
        """Hold the joints outside the chain at ``values`` {name: position}; unnamed ones at their default."""
        unknown = sorted(set(values) - set(self.held_joints) - set(self._joint_names))
        if unknown:
            raise CollisionError(f'joints {unknown} are not held joints of the collision model; '
                                 f'held joints: {self.held_joints}')
        bad = {k: v for k, v in values.items() if not np.isfinite(v)}
        if bad:
            raise CollisionError(f'held joint values must be finite, got {bad}')
        n, m = len(self._joint_names), len(self._rows)
        A, b = np.zeros((m, n)), np.zeros(m)
        for name in self.held_joints:
            b[self._rows[name]] = float(values.get(name, self._default[name]))
        for column, name in enumerate(self._joint_names):
            A[self._rows[name], column] = 1.0
        for name in self._mimic:
            self._follow(name, A, b, set())
        # Straight into Pinocchio's q: config = M q + c, and the angles of continuous joints = Ac q + bc.
        M, c = np.zeros((len(self._neutral), n)), self._neutral.copy()
        M[self._single[:, 1]], c[self._single[:, 1]] = A[self._single[:, 0]], b[self._single[:, 0]]
        rows = self._cos_sin[:, 0]
        D = np.zeros((self._nv, n))  # Pinocchio's velocity = D q-dot
        D[self._idx_v] = A
        self._affine = (M, c, A[rows], b[rows], D)  # one store: a concurrent full() never mixes old and new

    def _follow(self, name, A, b, visiting):
        """Fill the row of the mimic joint ``name`` from its master's (resolved first)."""
        mimic = self._mimic[name]
        if name in visiting:
            raise CollisionError(f"mimic joints form a cycle through '{name}'")
        if mimic.joint not in self._rows:
            raise CollisionError(f"mimic joint '{name}' follows '{mimic.joint}', which is not a 1-DoF joint")
        if mimic.joint in self._mimic:
            self._follow(mimic.joint, A, b, visiting | {name})
        multiplier = 1.0 if mimic.multiplier is None else float(mimic.multiplier)
        offset = 0.0 if mimic.offset is None else float(mimic.offset)
        row, master = self._rows.get(name), self._rows[mimic.joint]
        if row is not None:
            A[row] = multiplier * A[master]
            b[row] = multiplier * b[master] + offset

    def full(self, q):
        """Pinocchio configuration (nq,) of the robot at chain configuration ``q``."""
        M, c, Ac, bc, _ = self._affine
        config = M.dot(q)  # M.dot and an in-place sum: one allocation (check calls this per configuration)
        config += c
        if len(bc):
            angles = Ac @ q + bc
            config[self._cos_sin[:, 1]] = np.cos(angles)
            config[self._cos_sin[:, 1] + 1] = np.sin(angles)
        return config

    def velocity_map(self):
        """(nv, n) matrix D: Pinocchio's joint velocity is D q-dot (chain columns; mimic rows scaled)."""
        return self._affine[4]
