"""The background compiler: compiles the kernels a process asks for into the on-disk cache (``kernel_cache``).

``kernel_cache`` starts it as a script, ``python compile_server.py <lock file>``,
with ``IK_SOLVER_KERNELS=inline``.  It reads one request per stdin line,
``<id> <kind> <base64 of a pickled (module, name, arguments)>``: kind 'kernel'
compiles ``module.name`` for the argument types, 'call' runs
``module.name(*arguments)`` (a warm-up step).  Each answer is a stdout line,
``done <id>`` or ``failed <id> <error>``.  Kernel requests go before warm-up
steps, so the kernel a solve waits for is not queued behind minutes of
variants nobody used yet.

The lock file serialises the servers of all processes sharing the cache, so
each kernel compiles once (the next server finds it cached).  A server waits
for its first turn before it imports numba: the servers of many processes
started at once cost little memory while they wait.  At the end of its input
(its process has ended) a server still compiles the kernels that process used,
so its next start finds them, drops the warm-up steps not run yet, and exits.
"""
import base64
import fcntl
import importlib
import logging
import os
import pathlib
import pickle
import queue
import sys
import threading

_KERNEL, _CALL = 0, 1


def _read(requests):
    """Queue every request of stdin by priority (kernels first, then in order); the end after the kernels."""
    for line in sys.stdin.buffer:
        ident, kind, payload = line.split()
        requests.put((_KERNEL if kind == b'kernel' else _CALL, int(ident), payload))
    requests.put((_KERNEL, float('inf'), None))


def _serve(kind, payload):
    module, name, arguments = pickle.loads(base64.b64decode(payload))
    target = getattr(importlib.import_module(module), name)
    if kind == _KERNEL:
        target.compile(arguments)
    else:
        target(*arguments)


def main(lock_path):
    """Answer requests until stdin ends and the queue is empty (``lock_path``: the cache's lock file)."""
    requests = queue.PriorityQueue()
    threading.Thread(target=_read, args=(requests,), daemon=True).start()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())   # what else prints must not garble the answers
    with open(lock_path, 'a') as lock:
        while True:
            kind, ident, payload = requests.get()
            if payload is None:
                return
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                logging.getLogger('ik_solver').setLevel(logging.ERROR)   # the asking process told its user
                _serve(kind, payload)
                answer = f'done {ident}'
            except Exception as exc:   # noqa: B902 - reported to the asking process, which compiles itself
                answer = f'failed {ident} {type(exc).__name__}: {exc}'.replace('\n', ' ')
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
            try:
                print(answer, file=answers, flush=True)
            except OSError:   # the asking process has gone: finish the queue for the next one
                pass


if __name__ == '__main__':
    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[2])   # the package's parent, not this folder
    main(sys.argv[1])
