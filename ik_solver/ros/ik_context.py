"""What the IK node builds from one robot model and its parameters: solver, commander, controller, world.

A ``Context`` is replaced as a whole when the model or a parameter changes, so a solve or a move that
runs on the worker never sees half of a change.  The ``CommandHistory`` and the controller outlive a
parameter change (the move under way goes on); a new model starts both afresh.

Only what the parameters use is loaded: the compiled kernels of the configured step method and goals
(``core.warmup``), and the collision world (Pinocchio and Coal, tens of MB) only when collisions are
checked.  A parameter change or a request that needs more loads it then, once, and says so in the log.
"""
from dataclasses import dataclass, field, replace
from functools import partial
import threading

import numpy as np

from .controller import ControllerInterface
from .parameters import is_set, load_limits, move_limits, package_file, solver_options, workspace_box
from .stamps import MonotonicStamps
from ..core import warmup
from ..core.exceptions import ModelError
from ..core.solver import IKSolver
from ..motion.command_history import CommandHistory
from ..motion.commander import Commander, CommanderSettings, StateSources
from ..motion.plausibility import PAUSE, PlausibilitySettings, StatePlausibility

#: A controller's reference is a setpoint: between two of its messages it moves only as the limits allow, within
#: this [rad or m] (a lie of 0.05 rad interleaved with the true reference is then refused).
REFERENCE_TOLERANCE = 0.01


class WorldSlot:
    """The collision world of one model, built on first use: Pinocchio and Coal load only when collisions matter.

    Built when the model is loaded with ``avoid_collisions`` on, else when first needed (the parameter turned
    on, a request asking for collision checking, ``~/collision_objects``).  A refusal is kept: the same
    parameters fail the same way, so the build is not tried again.

    Args:
        build: ``build() -> CollisionWorld or None`` (None: no collision geometry, or Pinocchio missing);
            ValueError refuses the collision parameters.
        logger: where a build on first use is announced.
    """

    def __init__(self, build, logger):
        self._build = build
        self._logger = logger
        self._lock = threading.Lock()
        self._done = False
        self._world = None
        self._error = None

    @property
    def built(self):
        """Return the CollisionWorld if it has been built, else None (builds nothing)."""
        return self._world

    def get(self, why=None):
        """Return the CollisionWorld, building it now if needed, or None; ValueError if the parameters are refused.

        Args:
            why: what needs it, for the log line of a build on first use (None: the model is being loaded).
        """
        with self._lock:
            if not self._done:
                if why is not None:
                    self._logger.info(f'loading the collision model (Pinocchio, Coal) on first use: {why}')
                try:
                    self._world = self._build()
                except ValueError as exc:
                    self._error = str(exc)
                self._done = True
        if self._error is not None:
            raise ValueError(self._error)
        return self._world


@dataclass(frozen=True)
class Context:
    """Everything that belongs to one robot model: replaced as a whole when the model or a parameter changes."""

    model: object                  # RobotModel
    solver: IKSolver
    limits: object                 # LoadedLimits (the full limits)
    commander: Commander           # plans, guards (with the scaled limits a move may use) and sends moves
    controller: object
    world_slot: WorldSlot          # the model's collision world, built on first use
    variants: dict = field(default_factory=dict, compare=False)  # {avoid collisions: Context}, built on demand

    @property
    def guard(self):
        """Return the CommandGuard every command of this context crosses."""
        return self.commander.guard

    @property
    def history(self):
        """Return the CommandHistory of this model's commands."""
        return self.commander.history

    @property
    def collision(self):
        """Return the CollisionModel of the world if it has been built, else None (builds nothing)."""
        world = self.world_slot.built
        return world.model if world is not None else None

    def world(self, why):
        """Return the CollisionWorld (built now if needed: ``why`` says what needs it), or None without one.

        Raises:
            ValueError: the collision parameters are refused (a file, mesh or link at fault).
        """
        return self.world_slot.get(why)


class ContextBuilder:
    """Builds the Contexts of ``node`` (an IKSolverNode: its params, joint_states, clock and logger).

    Args:
        node: the IK node.
        on_controller_event: ``callback(execution, error_code, message)`` of the controller interface.
    """

    def __init__(self, node, on_controller_event):
        self._node = node
        self._stamps = MonotonicStamps(node.get_clock())
        self._on_controller_event = on_controller_event

    def build(self, model, values, xacro_args):
        """Return a fresh Context for ``model`` (RobotModel) with the parameter ``values``; ValueError refuses it."""
        node = self._node
        limits = load_limits(values, model.chain, node.get_logger())
        slot = WorldSlot(partial(self._collision_world, model, values, xacro_args), node.get_logger())
        world = slot.get() if values['avoid_collisions'] else None  # a model whose checks cannot be built is refused
        if not values['avoid_collisions']:
            node.get_logger().info('collision model: built when first needed (avoid_collisions is off)')
        collision = world.model if world is not None else None
        solver = self.solver(model.chain, values, collision)
        mid = model.chain.mid_configuration()
        solver.solve(model.chain.fk(mid), mid)  # the first solve of this chain honours its timeout
        controller = ControllerInterface(
            node, model.chain.joint_names,
            values['trajectory_topic'] or f"{values['controller_name']}/joint_trajectory",
            values['controller_name'], values['command_interface'], self._on_controller_event,
            state_group=node.inputs.group if hasattr(node, 'inputs') else None,   # the inputs thread takes it
            plausibility=StatePlausibility(PlausibilitySettings.from_limits(limits.limits,
                                                                            tolerance=REFERENCE_TOLERANCE)))
        history = CommandHistory()
        commander = self.commander(model.chain.joint_names, limits, values, controller, history, collision)
        node.joint_states.configure(limits.limits, expect=partial(history.expectation,
                                                                  velocity_limits=limits.limits.velocity, pause=PAUSE))
        return Context(model, solver, limits, commander, controller, slot)

    def rebuilt(self, context, values, why='avoid_collisions was set'):
        """Return ``context`` with the solver and commander of new parameter ``values`` (history kept).

        Args:
            context: the Context now in use.
            values: the new parameter values.
            why: what asks for collision checking, should the world be built now.

        Raises:
            ValueError: values that do not fit (scaling, box, solver options, the collision model).
        """
        world = context.world(why) if values['avoid_collisions'] else None
        collision = world.model if world is not None else None
        return replace(context, solver=self.solver(context.model.chain, values, collision),
                       commander=self.commander(context.model.chain.joint_names, context.limits, values,
                                                context.controller, context.history, collision),
                       variants={})

    def variant(self, context, avoid, values):
        """Return the Context that solves and guards with (``avoid`` True) or without collisions; None: as is."""
        if avoid is None or avoid == (context.guard.collision is not None):
            return context
        if avoid not in context.variants:
            context.variants[avoid] = self.rebuilt(context, dict(values, avoid_collisions=avoid),
                                                   'a request asks for collision checking')
        return context.variants[avoid]

    def solver(self, chain, values, collision=None):
        """Return the IKSolver of the parameter ``values``, checking collisions with ``collision`` if they ask.

        Kernels it is the first to run are loaded first (``warmup.load``), announced in the log.
        """
        options = solver_options(values, chain)
        checked = collision is not None and values['avoid_collisions']
        load_kernels(self._node.get_logger(), options, checked)
        return IKSolver(chain, options, **({'collision': collision} if checked else {}))

    def commander(self, names, loaded, values, controller, history, collision=None):
        """Return the Commander of the parameter ``values``; ValueError for scaling or a box that do not fit."""
        bounded = is_set(values['workspace.min']) or is_set(values['workspace.max'])
        settings = CommanderSettings(
            tuple(names), move_limits(loaded, values), values['command_lead_time'], values['sample_period'],
            values['state_tolerance'], workspace_box(values) if bounded else None, values['max_joint_jump'],
            collision if values['avoid_collisions'] else None)
        tracker = self._node.joint_states
        sources = StateSources(measured=lambda: tracker.state(names), reference=lambda: controller.reference())
        return Commander(settings, sources, partial(self._transport, controller), history)

    def _transport(self, controller, names, path, t0):
        """Send ``path`` stamped with its start ``t0`` [s, monotonic]: the controller joins it in step."""
        stamp = self._stamps.stamp(t0)
        return controller.send_path(names, path, stamp)

    def _collision_world(self, model, values, xacro_args):
        """Return the CollisionWorld of the collision parameters for ``model``, or None; ValueError refuses it."""
        logger = self._node.get_logger()
        try:
            from ..collision.world import collision_from_parameters
        except ImportError as exc:  # Pinocchio/Coal missing: no collision checking, said once per model
            logger.warning(f'collision checking unavailable ({exc}); solutions are not checked')
            return None
        try:
            world = collision_from_parameters(
                model.description, model.chain, package_file(values['srdf_file']), package_file(values['scene_file']),
                [d for d in values['package_dirs'] if d], values['collision_padding'], values['skip_missing_meshes'],
                values['collision_convex'], xacro_args=xacro_args, robot_name=model.robot.name,
                expanded=model.urdf or None)
        except (OSError, ModelError) as exc:
            raise ValueError(f'collision model: {exc}') from None
        if world is None:
            logger.info('the robot has no collision geometry: collisions are not checked')
            return None
        mid = model.chain.mid_configuration()
        world.model.check_path(np.array([mid, mid]))   # loads the path certificate's kernel now, not at a first move
        for note in world.model.notes:
            logger.warning(f'collision model: {note}')
        logger.info(f'collision model: {len(world.obstacles)} world objects')
        return world


def load_kernels(logger, options, collision=False):
    """Load the kernels a solver with ``options`` runs (``collision``: with a checker), logged when first used.

    Args:
        logger: the node's logger.
        options: the solver's SolverOptions.
        collision: whether the solver checks collisions.

    Raises:
        ValueError: options no solver accepts.
    """
    if warmup.missing(options, collision):
        details = [f"mode '{options.mode}'"] + ['nullspace goals'] * options.nullspace.active + \
            ['collision checking'] * bool(collision)
        logger.info(f"loading the compiled kernels of method '{options.method}' ({', '.join(details)}) on first use")
        warmup.load(options, collision)


def approximation_allowed(values, result):
    """Tell whether an IKResult that did not converge may still be commanded (``publish_approximation``).

    Args:
        values: the node's parameter values.
        result: the IKResult; its errors [m, rad] are compared with the ``approximation.*`` bounds.
    """
    return (values['publish_approximation'] and np.isfinite(result.joints).all()
            and result.position_error <= values['approximation.max_position_error']
            and result.orientation_error <= values['approximation.max_orientation_error'])
