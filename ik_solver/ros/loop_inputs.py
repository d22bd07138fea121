"""Subscriptions that a real-time loop thread takes itself, between its cycles, instead of the executor.

In one Python process the loop thread and the executor thread share the
interpreter lock.  rclpy's executor spends most of a millisecond of Python per
message it dispatches (wait-set bookkeeping, tasks), so with joint states and
commands streaming in, the loop thread often woke to find the lock held and
published late: the servo's 500 Hz period reached 2.9-3.0 ms at p99.  Taken
here, a message costs the loop a C-level take and its callback, at points of
its own schedule, and the executor keeps only services, parameters and timers.

Each subscription wakes the loop at most once per cycle, and each time gives
at most its queue's depth of messages: after it is taken, its queue (KEEP_LAST:
the newest messages) waits for the next cycle, so a flood costs a bounded
amount per cycle, not per message.

A node without a fixed-rate loop (the IK node) gives its streams to an
``InputsThread``: it takes each message as it arrives, on its own thread.  It
may give it services too (``serve`` only): their callbacks get
``(request, header)`` and answer with the service's ``send_response`` from
whichever thread finishes the work, so a request costs neither the executor's
wake-up to take it nor one to send its answer.
"""
from contextlib import ExitStack
import inspect
import threading
import time

from rclpy.callback_groups import CallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from .spin import real_time_or_warn


class LoopGroup(CallbackGroup):
    """A callback group that no executor runs (nor its subscriptions' QoS events, which would wake it per message)."""

    def can_execute(self, entity):
        return False

    def beginning_execution(self, entity):
        return False

    def ending_execution(self, entity):
        pass


class LoopInputs:
    """The subscriptions of ``node`` in ``group``, waited on and dispatched by the thread calling ``take``."""

    def __init__(self, node):
        self.group = LoopGroup()
        self._node = node
        self._subscriptions = None   # [(subscription, callback takes message info)], found at the first take
        self._services = []          # services in the group (``serve`` only)
        self._pending = []           # those not yet taken in this cycle
        self._wait_set = None
        self._holds = {}             # {subscription: predicate}: left in its queue while predicate() is True
        self._guard = None           # wakes ``serve`` (``wake``)
        self._guard_lock = threading.Lock()   # ``wake`` (any thread) never triggers a guard ``close`` released

    def new_cycle(self):
        """Take every waiting message now (a cycle is due) and let each subscription wake the loop again."""
        self._find()
        self._dispatch(self._subscriptions)
        self._pending = list(self._subscriptions)

    def take(self, timeout):
        """Wait up to ``timeout`` [s] for a subscription not yet taken this cycle; run its callbacks."""
        self._find()
        if not self._pending:
            time.sleep(timeout)
            return
        ready, _ = self._wait(self._pending, timeout)
        if ready:
            self._pending = [entry for entry in self._pending if entry not in ready]
            self._dispatch(ready)

    def serve(self, timeout):
        """Wait up to ``timeout`` [s] for the group's subscriptions and services; run the callbacks of those ready.

        The group's subscriptions and services are looked up on every call: one created or destroyed meanwhile (a new
        controller's state) is served from the next call on.  A held one (``hold_while``) is not waited on;
        ``wake`` ends the wait early, to look again.
        """
        self._find(again=True)
        with self._guard_lock:
            if self._guard is None:
                self._guard = _rclpy.GuardCondition(self._node.context.handle)
        entries = [entry for entry in self._subscriptions if not self._holds.get(entry[0], _never)()]
        ready, requested = self._wait(entries, timeout, self._guard, self._services)
        self._dispatch(ready)
        self._dispatch_requests(requested)

    def hold_while(self, subscription, predicate):
        """Leave ``subscription``'s messages in its queue while ``predicate()`` is True (``serve`` only).

        Its queue (KEEP_LAST) then keeps the newest: a flood costs a take per release, not per message.
        Whoever makes the predicate False calls ``wake``.
        """
        self._holds[subscription] = predicate

    def wake(self):
        """End the wait of ``serve`` under way (or the next one at once): a hold may have ended."""
        with self._guard_lock:
            if self._guard is not None:
                self._guard.trigger_guard_condition()

    def close(self):
        """Release the wake-up's guard condition (after the last ``serve``)."""
        with self._guard_lock:
            guard, self._guard = self._guard, None
        if guard is not None:
            guard.destroy_when_not_in_use()

    def _find(self, again=False):
        if self._subscriptions is not None and not again:
            return
        subscriptions = [s for s in self._node.subscriptions if s.callback_group is self.group]
        services = [s for s in self._node.services if s.callback_group is self.group]
        if self._subscriptions is not None and [s for s, _ in self._subscriptions] == subscriptions \
                and services == self._services:
            return
        self._subscriptions = [(s, len(inspect.signature(s.callback).parameters) == 2) for s in subscriptions]
        self._services = services
        self._pending = list(self._subscriptions)
        self._wait_set = _rclpy.WaitSet(len(subscriptions), 1, 0, 0, len(services), 0, self._node.context.handle)

    def _wait(self, entries, timeout, guard=None, services=()):
        """Return (entries, services) ready within ``timeout`` [s] (or when ``guard`` triggers).

        An entry is ready when its subscription has a message, a service when it has a request; the handles
        are held through the wait: one destroyed meanwhile is released after it.
        """
        wait_set = self._wait_set
        wait_set.clear_entities()
        with ExitStack() as held:
            try:
                for subscription, _ in entries:
                    held.enter_context(subscription.handle)
                    wait_set.add_subscription(subscription.handle)
                for service in services:
                    held.enter_context(service.handle)
                    wait_set.add_service(service.handle)
            except InvalidHandle:   # destroyed: the next call looks the entities up again
                return [], []
            if guard is not None:
                wait_set.add_guard_condition(guard)
            wait_set.wait(int(timeout * 1e9))
        ready = set(wait_set.get_ready_entities('subscription'))
        ready_services = set(wait_set.get_ready_entities('service')) if services else ()
        return ([entry for entry in entries if entry[0].handle.pointer in ready],
                [service for service in services if service.handle.pointer in ready_services])

    def _dispatch(self, entries):
        """Run each subscription's callback on the messages in its queue (``queued_messages``)."""
        for subscription, with_info in entries:
            for taken in queued_messages(subscription):
                self._call(subscription.topic_name, subscription.callback, taken if with_info else taken[:1])

    def _dispatch_requests(self, services):
        """Run each service's callback on its waiting requests (``queued_requests``): ``callback(request, header)``."""
        for service in services:
            for taken in queued_requests(service):
                self._call(service.srv_name, service.callback, taken)

    def _call(self, name, callback, args):
        """Run ``callback(*args)`` for input ``name`` (a topic or a service).

        A callback that raises is logged, and the other messages, requests and subscriptions are still served:
        one malformed message must not end the thread that takes a node's streams.
        """
        try:
            callback(*args)
        except Exception as exc:   # the thread outlives any message
            self._node.get_logger().error(f'{name}: message dropped: {exc!r}', throttle_duration_sec=5.0)


class InputsThread(threading.Thread):
    """Runs the callbacks of a LoopInputs' subscriptions and services on a thread of its own, as input arrives.

    For a node whose streams (joint states, targets, a controller's state, each at hundreds of Hz) would
    otherwise wake its executor: each wake-up costs rclpy's executor most of a millisecond of Python
    with the interpreter lock held, which the node's worker then waits for.  Here a message costs a
    C-level wait and take and its callback.

    Args:
        inputs: the LoopInputs whose group the streams' subscriptions belong to.
        logger: says once that the thread keeps normal scheduling, where SCHED_FIFO is refused.
        priority: SCHED_FIFO priority to ask for (0: normal scheduling).
        name: the thread's name.
    """

    #: Longest wait [s] before a subscription created meanwhile is served, or a stop is seen.
    PERIOD = 0.05

    def __init__(self, inputs, logger, priority=0, name='inputs'):
        super().__init__(name=name, daemon=True)
        self._inputs, self._logger, self._priority = inputs, logger, priority
        self._running = True

    def run(self):
        real_time_or_warn(self._logger, self._priority, self.name, 'its messages and requests')
        while self._running:
            self._inputs.serve(self.PERIOD)
        self._inputs.close()

    def stop(self, timeout=1.0):
        """End the thread after the wait or callbacks under way (within ``timeout`` [s])."""
        self._running = False
        self._inputs.wake()
        if self.is_alive():
            self.join(timeout)


def _never():
    return False


def queued_messages(subscription):
    """Yield (message, MessageInfo) of the messages waiting in ``subscription``'s queue, oldest first.

    Taken on the calling thread, not the executor's: at most the queue's depth (a flood refills it), none once
    the subscription is destroyed.

    Args:
        subscription: an rclpy Subscription whose callback group keeps the executor from taking it meanwhile.
    """
    for _ in range(max(subscription.qos_profile.depth, 1)):
        try:
            with subscription.handle:
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
        except InvalidHandle:
            return
        if taken is None:
            return
        yield taken


def queued_requests(service):
    """Yield (request, header) of the requests waiting for ``service``, oldest first; none once it is destroyed.

    Taken on the calling thread, not the executor's, at most the queue's depth per call, as messages are; the
    header identifies the caller to ``send_response``.
    """
    for _ in range(max(service.qos_profile.depth, 1)):
        try:
            with service.handle:
                request, header = service.handle.service_take_request(service.srv_type.Request)
        except InvalidHandle:
            return
        if header is None:
            return
        yield request, header
