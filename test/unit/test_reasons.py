"""One table of reasons: the Reason enum equals the services' response constants, read from the .srv files."""
import pathlib
import re

from ik_solver.core.reasons import Reason
from ik_solver.core.results import REASONS
from ik_solver.ros.outcome import Outcome, reason_code
import pytest

SRV = pathlib.Path(__file__).resolve().parents[2] / 'ik_solver_interfaces' / 'srv'


def response_constants(name):
    """Return {NAME: value} of the uint8 constants in the response part (after ---) of a .srv file."""
    response = (SRV / name).read_text().split('\n---\n', 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r'^uint8\s+([A-Z_]+)\s*=\s*(\d+)', response, re.MULTILINE)}


def test_reason_values_are_the_solve_ik_response_constants():
    constants = response_constants('SolveIK.srv')
    assert len(constants) >= 18
    assert {r.name: int(r) for r in Reason} == constants


def test_plan_path_answers_with_solve_ik_codes():
    """A PlanPath response carries SolveIK's codes (it has none of its own), so the enum covers it too."""
    text = (SRV / 'PlanPath.srv').read_text()
    assert re.search(r'^uint8 reason\s+# a SolveIK.Response code', text, re.MULTILINE)
    assert response_constants('PlanPath.srv') == {}


def test_labels_and_codes_round_trip():
    for reason in Reason:
        assert Reason.of(reason.label) is reason and Reason.of(reason.label.upper()) is reason
        assert Reason.of(int(reason)) is reason and reason.description
        assert reason_code(reason.label) == int(reason)
    assert set(REASONS) <= {r.label for r in Reason}
    with pytest.raises(ValueError):
        Reason.of('no_such_reason')
    assert reason_code('no_such_reason') == Reason.INVALID_INPUT


def test_outcomes_carry_labels_and_codes():
    given_member = Outcome('service', Reason.JOINT_JUMP)
    assert given_member.reason == 'joint_jump' and given_member.code == 8 and not given_member.success
    assert Outcome('topic', 'success').success and Outcome('topic', Reason.SUCCESS).code == 0
