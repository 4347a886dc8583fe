"""`punctkit serve` as a child process, and a client's POST and websocket talk, for the tests that talk to
a real server (test_serve.py, test_limits.py, test_stream_property.py)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from punct_util import PK


class Server:
    """`punctkit serve -m pkt` as a child process on a free port of 127.0.0.1 (--port 0, read back from
    its log, `log`), with `args` besides; `tmp`: its TMPDIR. Started when /health answers 200."""

    def __init__(self, pkt: Path, log: Path, *args: Any, tmp: Path | None = None):
        self.log, self.tmp = log, tmp
        before = log.read_text() if log.exists() else ""
        env = None if tmp is None else {**os.environ, "TMPDIR": str(tmp)}
        self.proc = subprocess.Popen(PK + ["serve", "-m", str(pkt), "--port", "0", "--threads", "1",
                                           "--log", str(log), *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            new = log.read_text()[len(before):] if log.exists() else ""
            if "listening on http://" in new:
                self.url = new.split("listening on ")[1].split()[0]
                self.port = int(self.url.rsplit(":", 1)[1])
                break
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited: {self.proc.communicate()[1]}")
            time.sleep(0.05)
        else:
            self.stop()
            raise AssertionError("serve did not start in 60 s")
        with urllib.request.urlopen(self.url + "/health", timeout=30) as r:
            assert r.status == 200 and json.loads(r.read())["status"] == "ok"

    def stop(self) -> tuple[int, str]:
        """SIGTERM, then the exit status and stderr (killed after 30 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise
        return self.proc.returncode, err

    def peak_rss_kb(self) -> int:
        """The process's peak resident memory (VmHWM), in KiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM")


def post(url: str, body: bytes, ctype: str = "text/plain") -> tuple[int, str, str]:
    """(status, content type, body) of a POST; an HTTP error status is returned, not raised."""
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get_content_type(), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get_content_type(), e.read().decode()


def ws_replies(url: str, messages: list[str | bytes], query: str = "") -> tuple[list[Any], int | None]:
    """Every reply of the /stream websocket to `messages` then `{"eof": true}` (text replies as strings,
    JSON errors as dicts), read until the server closes, and the close code (1000: a normal close)."""
    import aiohttp

    async def run() -> tuple[list[Any], int | None]:
        got: list[Any] = []
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url.replace("http://", "ws://") + "/stream" + query) as ws:
                for m in messages + [json.dumps({"eof": True})]:
                    await (ws.send_bytes(m) if isinstance(m, bytes) else ws.send_str(m))
                while (reply := await asyncio.wait_for(ws.receive(), 60)).type == aiohttp.WSMsgType.TEXT:
                    got.append(json.loads(reply.data) if reply.data.startswith('{"error": ') else reply.data)
                return got, ws.close_code

    return asyncio.run(run())
