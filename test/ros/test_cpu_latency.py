"""The CPU wake-up latency request: the value written as the kernel reads it, held until released, refusals said."""
import os
import struct

from ik_solver.ros.cpu_latency import CpuLatencyRequest, DEVICE, hold_cpu_latency
import pytest


class Logger:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)


def test_the_request_is_a_native_32_bit_integer_held_until_released(tmp_path):
    device = tmp_path / 'cpu_dma_latency'
    device.write_bytes(b'')
    request = CpuLatencyRequest(25, str(device))
    assert request.held and request.refused is None
    assert struct.unpack('i', device.read_bytes()) == (25,)
    fd = request._fd
    request.release()
    request.release()   # a second release does nothing
    assert not request.held
    with pytest.raises(OSError):
        os.fstat(fd)   # the file is closed: the kernel drops the request


def test_a_negative_latency_makes_no_request_and_says_nothing(tmp_path):
    logger = Logger()
    request = hold_cpu_latency(-1, logger, str(tmp_path / 'absent'))
    assert not request.held and request.refused is None
    assert logger.lines == []


def test_a_refused_request_is_said_once_and_the_node_goes_on(tmp_path):
    logger = Logger()
    request = hold_cpu_latency(0, logger, str(tmp_path / 'no' / 'such' / 'device'))
    assert not request.held and request.refused
    assert len(logger.lines) == 1 and 'refused' in logger.lines[0]
    request.release()


def _current():
    """Return the CPU wake-up latency [us] the kernel holds now (the least of all requests)."""
    fd = os.open(DEVICE, os.O_RDONLY)
    try:
        return struct.unpack('i', os.read(fd, 4))[0]
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.access(DEVICE, os.W_OK), reason=f'{DEVICE} is not writable here (needs root)')
def test_the_kernel_holds_the_latency_while_the_request_is_held():
    if _current() <= 3:
        pytest.skip('another process holds 3 us or less: ours would not show')
    logger = Logger()
    request = hold_cpu_latency(3, logger)
    try:
        assert _current() == 3
        assert 'held at 3 us' in logger.lines[0]
    finally:
        request.release()
