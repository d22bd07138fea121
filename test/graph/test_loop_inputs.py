"""LoopInputs: subscriptions and services taken by their thread, never by the executor; a flood bounded per cycle."""
import subprocess
import sys
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from ik_solver.ros.loop_inputs import InputsThread, LoopInputs  # noqa: E402, I100, I202
from rclpy.qos import HistoryPolicy, QoSProfile  # noqa: E402
from std_msgs.msg import Int32  # noqa: E402

CYCLE = 0.01


@pytest.fixture
def node():
    from ros_fixtures import isolate_ros_domain, spinning
    isolate_ros_domain()
    rclpy.init()
    node = rclpy.create_node('loop_inputs_test')
    with spinning(node):   # the executor runs beside the test: it must not take the loop's messages
        yield node


class Received:
    """Callback recording (value, thread) of each message."""

    def __init__(self):
        self.items = []

    def __call__(self, msg):
        self.items.append((msg.data, threading.get_ident()))


def subscribe(node, inputs, topic, depth, callback):
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth)
    node.create_subscription(Int32, topic, callback, qos, callback_group=inputs.group)
    publisher = node.create_publisher(Int32, topic, qos)
    deadline = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return publisher


def run_cycles(inputs, cycles):
    """Run ``cycles`` loop cycles as the servo's loop thread does: new_cycle, then take until the next one."""
    for _ in range(cycles):
        inputs.new_cycle()
        due = time.monotonic() + CYCLE
        while (remaining := due - time.monotonic()) > 0:
            inputs.take(remaining)


def test_messages_reach_only_the_thread_that_takes_them_all_of_them_in_order(node):
    inputs = LoopInputs(node)
    received = Received()
    with_info = []
    publisher = subscribe(node, inputs, 'numbers', 10, received)
    other = subscribe(node, inputs, 'numbers_info', 10, lambda msg, info: with_info.append(info))
    for i in range(5):
        publisher.publish(Int32(data=i))
    other.publish(Int32(data=7))
    time.sleep(0.5)
    assert received.items == []   # the spinning executor did not run them
    run_cycles(inputs, 3)
    assert [value for value, _ in received.items] == [0, 1, 2, 3, 4]
    assert {thread for _, thread in received.items} == {threading.get_ident()}
    assert len(with_info) == 1 and with_info[0]['source_timestamp'] > 0


def test_a_message_between_cycles_is_taken_on_arrival(node):
    inputs = LoopInputs(node)
    arrivals = []
    publisher = subscribe(node, inputs, 'numbers', 1, lambda msg: arrivals.append(time.monotonic()))
    inputs.new_cycle()
    sent = time.monotonic()
    threading.Timer(0.1, publisher.publish, args=(Int32(data=1),)).start()
    while not arrivals and time.monotonic() < sent + 5.0:
        inputs.take(1.0)   # one long wait, as between two ticks of a slow loop
    assert arrivals and arrivals[0] - sent < 1.0   # woken by the message, not by the end of the wait


#: Publishes as fast as it can until its standard input closes (the test's cycles are done), or
#: ``sys.argv[1]`` seconds at most; then prints how many messages it sent.
FLOODER = """
import sys, threading, time, rclpy
from std_msgs.msg import Int32
rclpy.init()
node = rclpy.create_node('loop_inputs_flooder')
publisher = node.create_publisher(Int32, 'flood', 1)
released = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), released.set()), daemon=True).start()
end = time.monotonic() + float(sys.argv[1])
count = 0
while not released.is_set() and time.monotonic() < end:
    publisher.publish(Int32(data=count))
    count += 1
print(count)
"""


#: How long [s] the flood goes on at least, from its first message on.
FLOOD_SECONDS = 2.5


def test_a_flood_costs_at_most_two_takes_per_cycle(node):
    inputs = LoopInputs(node)
    received = Received()
    subscribe(node, inputs, 'flood', 1, received)
    cycles = 50
    # flooding until told to stop (60 s at most, should the test die first)
    flooder = subprocess.Popen([sys.executable, '-c', FLOODER, '60'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.monotonic() + 5.0
        while not received.items and time.monotonic() < deadline:   # the flood has begun
            inputs.take(0.1)
        began = time.monotonic()
        before = len(received.items)
        run_cycles(inputs, cycles)
        taken = len(received.items) - before
        # stopped once the cycles are done and FLOOD_SECONDS after it began: a flooder a loaded machine
        # starves still sends many more messages than there were cycles
        time.sleep(max(0.0, began + FLOOD_SECONDS - time.monotonic()))
    finally:
        sent = int(flooder.communicate(timeout=30)[0])   # closes its stdin: the flood ends
    assert sent > 20 * cycles, sent   # it was a flood: many more messages than cycles
    # each cycle: one at its start, at most one woken in between; a loaded machine may starve the flooder for a
    # cycle or more, so a cycle may also take none
    assert 0 < taken <= 2 * cycles, taken


class Logger:
    def __init__(self):
        self.warnings = []

    def warning(self, text):
        self.warnings.append(text)


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_an_inputs_thread_runs_callbacks_on_arrival_also_of_subscriptions_made_or_destroyed_later(node):
    """The IK node's streams: each message on the thread's own, a new controller's state served, an old one let go."""
    inputs = LoopInputs(node)
    received, later = Received(), Received()
    publisher = subscribe(node, inputs, 'numbers', 10, received)
    thread = InputsThread(inputs, Logger())
    thread.start()
    try:
        sent = time.monotonic()
        publisher.publish(Int32(data=1))
        assert _wait_for(lambda: received.items)
        assert time.monotonic() - sent < InputsThread.PERIOD + 1.0
        (value, ident), = received.items
        assert value == 1 and ident == thread.ident
        gone = node.create_subscription(Int32, 'gone', lambda msg: None, 10, callback_group=inputs.group)
        second = subscribe(node, inputs, 'later', 10, later)   # made while the thread waits
        node.destroy_subscription(gone)   # destroyed while it may be in the thread's wait
        for i in range(3):
            second.publish(Int32(data=i))
            publisher.publish(Int32(data=10 + i))
        assert _wait_for(lambda: len(later.items) == 3 and len(received.items) == 4)
        assert [v for v, _ in later.items] == [0, 1, 2] and [v for v, _ in received.items] == [1, 10, 11, 12]
    finally:
        thread.stop()
    assert not thread.is_alive()


def test_an_inputs_thread_takes_service_requests_and_another_thread_sends_the_answers(node):
    """The IK node's ~/solve: each request on the inputs thread, answered from a worker, none by the executor."""
    from std_srvs.srv import SetBool
    inputs = LoopInputs(node)
    takers, answerers = [], []

    def answer_later(request, header):
        takers.append(threading.get_ident())

        def answer():
            answerers.append(threading.get_ident())
            service.send_response(SetBool.Response(success=request.data, message=f'{len(takers)}'), header)
        threading.Thread(target=answer).start()
    service = node.create_service(SetBool, 'switch', answer_later, callback_group=inputs.group)
    caller = rclpy.create_node('loop_inputs_caller')
    client = caller.create_client(SetBool, 'switch')
    thread = InputsThread(inputs, Logger())
    thread.start()
    try:
        assert client.wait_for_service(timeout_sec=10.0)
        answers = []
        for data in (True, False, True):
            future = client.call_async(SetBool.Request(data=data))
            rclpy.spin_until_future_complete(caller, future, timeout_sec=10.0)
            answers.append((future.result().success, future.result().message))
        assert answers == [(True, '1'), (False, '2'), (True, '3')]
        assert set(takers) == {thread.ident} and thread.ident not in answerers
    finally:
        thread.stop()
        caller.destroy_node()
    assert not thread.is_alive()


def test_a_held_subscription_keeps_its_newest_message_until_released_and_woken(node):
    """A flood while the IK worker handles a target: left in its queue, one take when the hold ends."""
    inputs = LoopInputs(node)
    received = Received()
    holding = [True]
    publisher = subscribe(node, inputs, 'held', 1, received)
    inputs.hold_while(node_subscription(node, 'held'), lambda: holding[0])
    thread = InputsThread(inputs, Logger())
    thread.PERIOD = 10.0   # only a message or a wake-up ends a wait
    thread.start()
    try:
        for i in range(20):
            publisher.publish(Int32(data=i))
        time.sleep(0.3)
        assert received.items == []   # held: the queue keeps them (its depth: the newest)
        holding[0] = False
        released = time.monotonic()
        inputs.wake()   # the thread was waiting on nothing else: woken, it looks again
        assert _wait_for(lambda: received.items)
        assert time.monotonic() - released < 5.0
        assert [v for v, _ in received.items] == [19]
    finally:
        thread.stop()
    assert not thread.is_alive()


def node_subscription(node, topic):
    (subscription,) = [s for s in node.subscriptions if s.topic_name == f'/{topic}']
    return subscription


def test_a_callback_that_raises_is_logged_and_the_inputs_thread_serves_on(node):
    """One malformed message (a stamp before 1970 made a callback raise) must not end the node's streams."""
    inputs = LoopInputs(node)
    received = Received()

    def fragile(msg):
        if msg.data < 0:
            raise ValueError('Seconds value must not be negative')
        received(msg)
    publisher = subscribe(node, inputs, 'fragile', 10, fragile)
    thread = InputsThread(inputs, Logger())
    thread.start()
    try:
        publisher.publish(Int32(data=-1))
        publisher.publish(Int32(data=2))
        assert _wait_for(lambda: received.items)
        publisher.publish(Int32(data=3))
        assert _wait_for(lambda: len(received.items) == 2)
        assert [v for v, _ in received.items] == [2, 3] and thread.is_alive()
    finally:
        thread.stop()
