"""The demo (``observer.send_answered``) re-sends a target the node answered ``expired`` or not at all, only those.

An overloaded machine can deliver a target after ``max_target_age``; the node rightly refuses it without moving.
The demo is a client and sends it again with a fresh stamp, but never re-sends a target refused for any other
reason (an unreachable target must stay refused).
"""
from types import SimpleNamespace

from ik_solver_demos.tools.demo import Demo
import pytest


class ScriptedObserver:
    """Answers each sent target with the next scripted status reason (None, or none left: no answer)."""

    def __init__(self, reasons):
        self.reasons = list(reasons)
        self.sent = 0

    def send_target(self, target):
        self.sent += 1
        return float(self.sent)

    def wait_status(self, since, timeout):
        reason = self.reasons.pop(0) if self.reasons else None
        if reason is None:
            return None
        return SimpleNamespace(reason=reason, message=f'scripted {reason}', success=reason == 'success')


def demo_with(reasons):
    demo = Demo.__new__(Demo)
    demo.observer = ScriptedObserver(reasons)
    return demo


def test_an_expired_target_is_sent_again_until_answered():
    demo = demo_with(['expired', 'expired', 'success'])
    sent, status = demo.send_and_wait('reach', target=None)
    assert status.reason == 'success'
    assert demo.observer.sent == 3 and sent == 3.0


@pytest.mark.parametrize('reason', ['unreachable', 'success', 'joint_jump'])
def test_other_answers_are_final(reason):
    demo = demo_with([reason, 'success'])
    _, status = demo.send_and_wait('reach', target=None)
    assert status.reason == reason
    assert demo.observer.sent == 1


def test_gives_up_after_the_attempts():
    demo = demo_with(['expired'] * 3)
    _, status = demo.send_and_wait('reach', target=None, attempts=3)
    assert status.reason == 'expired'
    assert demo.observer.sent == 3


def test_a_silent_node_is_asked_again_then_an_error():
    demo = demo_with([])
    with pytest.raises(RuntimeError, match='did not answer'):
        demo.send_and_wait('reach', target=None)
    assert demo.observer.sent == 3


def test_a_lost_target_is_sent_again(capsys):
    demo = demo_with([None, 'success'])
    _, status = demo.send_and_wait('reach', target=None)
    assert status.reason == 'success' and demo.observer.sent == 2
    assert 'no answer; sending it again' in capsys.readouterr().out
