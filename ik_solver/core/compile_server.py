"""The background compiler: compiles the kernels a process asks for into the on-disk cache (``kernel_cache``).

Started by ``kernel_cache`` with ``IK_SOLVER_KERNELS=inline``; reads one
request per stdin line (base64 of a pickled ``(id, kind, module, name,
arguments)``): 'kernel' compiles ``module.name`` for the argument types,
'call' runs ``module.name(*arguments)`` (a warm-up step).  Each answer is a stdout line,
``done <id>`` or ``failed <id> <error>``.  Kernel requests go before warm-up
steps, so the kernel a solve waits for is not queued behind minutes of
variants nobody used yet.  A lock file in the cache folder serialises the
servers of several processes, so they compile each kernel once: the second
finds it cached.  At the end of its input (its process has ended) the server
still compiles the kernels that process used, so its next start finds them,
but drops the warm-up steps not run yet, then exits.
"""
import base64
import fcntl
import importlib
import logging
import os
import pickle
import queue
import sys
import threading

from . import kernel_cache

#: Lock file (in the cache root) held while compiling.
LOCK_NAME = 'compile.lock'
_KERNEL, _CALL = 0, 1


def _read(requests):
    """Queue every request of stdin by priority (kernels first, then in order); the end after the kernels."""
    for line in sys.stdin.buffer:
        ident, kind, module, name, arguments = pickle.loads(base64.b64decode(line))
        requests.put((_KERNEL if kind == 'kernel' else _CALL, ident, module, name, arguments))
    requests.put((_KERNEL, float('inf'), None, None, None))


def _serve(kind, module, name, arguments):
    target = getattr(importlib.import_module(module), name)
    if kind == _KERNEL:
        target.compile(arguments)
    else:
        target(*arguments)


def main():
    """Answer requests until stdin ends and the queue is empty."""
    logging.getLogger('ik_solver').setLevel(logging.ERROR)   # the asking process told its user
    root = kernel_cache.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    requests = queue.PriorityQueue()
    threading.Thread(target=_read, args=(requests,), daemon=True).start()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())   # what else prints must not garble the answers
    with open(root / LOCK_NAME, 'a') as lock:
        while True:
            kind, ident, module, name, arguments = requests.get()
            if module is None:
                return
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                _serve(kind, module, name, arguments)
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
    main()
