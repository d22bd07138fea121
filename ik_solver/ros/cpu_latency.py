"""Hold the CPUs' wake-up latency low while a node runs (Linux PM QoS, ``/dev/cpu_dma_latency``).

An idle CPU sleeps in a power-saving state.  A node that waits for its next target, request or cycle most
of the time wakes from that state: the wake-up itself, then caches and branch predictors gone cold.  On a
host whose CPUs sleep deeply, a solve of 12 us back to back can take ten times as long 5 ms after the
previous one, and so can every step of the command after it.  Holding the latency at 0 us keeps idle CPUs
in their shallowest state, as real-time latency tools (cyclictest) do.  It costs power on every CPU of the
machine while the node runs; the kernel drops the request when the file is closed, and so when the
process ends however it ends.

Writing the file needs root (the device is root's, mode 0600).  Where it is refused the node says so once
and runs as the system has it.
"""
import os
import struct

#: The PM QoS device of the CPU wake-up latency (Documentation/power/pm_qos_interface.rst).
DEVICE = '/dev/cpu_dma_latency'


class CpuLatencyRequest:
    """Holds one PM QoS request for the CPUs' wake-up latency until ``release()``.

    Args:
        microseconds: the largest wake-up latency to allow [us]; negative: make no request.
        device: the PM QoS device (a stand-in file in tests).
    """

    def __init__(self, microseconds, device=DEVICE):
        self.microseconds = microseconds
        self.refused = None   # why the request could not be made (None: held, or none asked)
        self._fd = None
        if microseconds < 0:
            return
        try:
            self._fd = os.open(device, os.O_WRONLY)
            os.write(self._fd, struct.pack('i', microseconds))   # the device takes a native 32-bit integer
        except OSError as exc:
            self.release()
            self.refused = exc.strerror or str(exc)

    @property
    def held(self):
        """Whether the request is in force."""
        return self._fd is not None

    def release(self):
        """Drop the request (the kernel forgets it with the file); calling it again does nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def hold_cpu_latency(microseconds, logger, device=DEVICE):
    """Return a ``CpuLatencyRequest`` for ``microseconds`` [us] and log once what became of it.

    Args:
        microseconds: the node's ``cpu_wake_latency`` parameter [us]; negative: no request, nothing logged.
        logger: the node's logger.
        device: the PM QoS device.
    """
    request = CpuLatencyRequest(microseconds, device)
    if request.held:
        logger.info(f'CPU wake-up latency held at {microseconds} us while this node runs (PM QoS {device}): '
                    'faster answers after idle time, more power; cpu_wake_latency -1 leaves it to the system')
    elif request.refused is not None:
        logger.info(f'CPU wake-up latency left to the system: {device} refused ({request.refused}); the first '
                    'command after idle time may wait for the CPU to wake')
    return request
