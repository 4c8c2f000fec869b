"""A ``kartoframe`` command line that is imported once and forks a child per invocation.

The command-line tests run hundreds of invocations; each real console script spends about
0.5 s of CPU importing pandas, pyarrow, dask and kartoframe before it does anything. This
program (started by ``cli_helpers``, one per concurrent invocation) imports the console
script's entry point once, then reads one request per line on standard input:

    {"args": [...], "env": {...}, "cwd": "...", "stdout": "file", "stderr": "file"}

For each it forks. The child takes the request's environment, working directory and
standard streams (standard input is ``/dev/null``) and runs exactly what the installed
console script runs, ``sys.exit(main())``, so it exits through the interpreter's normal
shutdown (``atexit`` handlers, flushed streams) like a fresh process. The parent waits for
it and answers ``{"code": exit code}``.

A fork copies only the forking thread, so it is only safe while no other thread could
hold a lock the child needs. The imports start two native threads, both built to survive a
fork: numpy's OpenBLAS worker (its ``pthread_atfork`` handlers stop and restart its
threads) and pyarrow's jemalloc background thread (jemalloc's fork handlers take and reset
its locks). Before every fork the zygote checks that it runs no Python thread and no
native thread beyond those (``/proc/self/task``; OpenBLAS stops its worker at the first
fork and starts it again only when it is next used); otherwise it refuses the request
(``{"refused": why}``) and the client runs the real console script instead.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from kartoframe.cli import main


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1  # unknown: refuse


def _child(req: dict[str, object], channels: tuple[int, int]) -> None:
    """Become the invocation ``req`` (never returns)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in channels:  # the zygote's request and answer pipes are not the child's
        os.dup2(devnull, fd)
    os.dup2(devnull, 0)
    for fd, key in ((1, "stdout"), (2, "stderr")):
        target = os.open(str(req[key]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    os.close(devnull)
    os.chdir(str(req["cwd"]))
    env = req["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    args = req["args"]
    assert isinstance(args, list)
    sys.argv = ["kartoframe", *map(str, args)]
    sys.exit(main())


def serve() -> None:
    requests = sys.stdin.buffer
    answers = sys.stdout
    channels = (requests.fileno(), answers.fileno())
    after_imports = _threads()  # the main thread, OpenBLAS's and jemalloc's (see above)
    for line in requests:
        req = json.loads(line)
        threads = _threads()
        if threading.active_count() != 1 or not 1 <= threads <= after_imports:
            answer: dict[str, object] = {
                "refused": f"{threads} threads in the zygote, {after_imports} after its imports"
            }
        else:
            answers.flush()
            pid = os.fork()
            if pid == 0:
                _child(req, channels)
            _, status = os.waitpid(pid, 0)
            answer = {"code": os.waitstatus_to_exitcode(status)}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
