"""`punctkit ARGS...` for the tests, each command a process of its own, forked from a server process that has
torch and punctkit's CLI loaded already: a command then starts in milliseconds instead of the 2 s that loading
torch takes, hundreds of times a suite.

What a command sees is what `python -m punctkit.cli ARGS` sees: a fresh process (a fork of the server, which has
loaded modules and run nothing), the caller's working directory and environment, standard input empty, its
standard output and error captured, its exit status (SystemExit's code; 1 and Python's traceback for an uncaught
exception; minus the signal for a signal). Where that cannot hold, the command runs as `python -m punctkit.cli`:
a platform without fork, a server that cannot start, or an environment that differs from the one the server
started in by anything but PYTEST_CURRENT_TEST (libraries read some variables, such as OMP_NUM_THREADS, when
they load).
"""
from __future__ import annotations

import json
import locale
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

PK = [sys.executable, "-m", "punctkit.cli"]
VOLATILE = {"PYTEST_CURRENT_TEST"}

# the server: loads what every command loads, then forks a command for each request line (JSON: argv, cwd,
# env, out, err) and answers with its exit status; requests come one at a time
SERVER = r'''
import json, os, sys, traceback
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as punctkit.infer.backends.import_torch sets it
import torch
import punctkit.cli

def readline():
    buf = b""
    while not buf.endswith(b"\n"):
        b = os.read(0, 1 << 16)
        if not b:
            sys.exit(0)
        buf += b
    return buf

os.write(1, b"ready\n")
while True:
    req = json.loads(readline())
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            for fd, path in ((1, req["out"]), (2, req["err"])):
                f = os.open(path, os.O_WRONLY | os.O_TRUNC)
                os.dup2(f, fd)
                os.close(f)
            sys.argv = ["punctkit", *req["argv"]]
            try:
                punctkit.cli.main(req["argv"])
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, (int, type(None))):
                    print(e.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    os.write(1, (json.dumps(os.waitstatus_to_exitcode(status)) + "\n").encode())
'''

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in VOLATILE}


def _server() -> subprocess.Popen | None:
    """The server process (started on first use, again if it has gone), or None where there can be none."""
    p = _state.get("server")
    if p is not None and p.poll() is None:
        return p
    if not hasattr(os, "fork") or _state.get("failed"):
        return None
    p = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if p.stdout.readline() != b"ready\n":
        p.kill()
        _state["failed"] = True
        return None
    _state["server"], _state["env"] = p, _env()
    return p


def run(argv: list[str]) -> subprocess.CompletedProcess:
    """`punctkit ARGV`: its exit status and captured output, as subprocess.run(..., capture_output=True,
    text=True) gives them."""
    with _lock:
        p = _server()
        if p is None or _env() != _state["env"]:
            return subprocess.run(PK + argv, capture_output=True, text=True)
        with tempfile.TemporaryDirectory(prefix="punctkit-cli-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            out.touch()
            err.touch()
            req = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "out": str(out), "err": str(err)}
            p.stdin.write((json.dumps(req) + "\n").encode())
            p.stdin.flush()
            code = json.loads(p.stdout.readline())
            enc = locale.getpreferredencoding(False)
            # as text=True reads a pipe: the locale's encoding, universal newlines (a progress bar's \r too)
            text = [f.read_bytes().decode(enc).replace("\r\n", "\n").replace("\r", "\n") for f in (out, err)]
            return subprocess.CompletedProcess(PK + argv, code, text[0], text[1])
