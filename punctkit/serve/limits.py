"""What `punctkit serve` is asked for and what it refuses before a request reaches the model: its options
(`ServeOptions`; sizes, rates and host names parsed from the command line), the Host and Origin check
against DNS rebinding (403, `HostCheck`), the per-client token bucket (429, `RateLimit`) and admission
control (503 with Retry-After past the requests or body bytes in flight, `Admission`). The middleware
that applies them is `app.Service.guarded`."""
from __future__ import annotations

import contextlib
import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from aiohttp import web

from punctkit.files import PunctkitError
from punctkit.serve.errors import printable

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")  # always accepted in Host (and any loopback address)
ADMITTED = ("/punctuate", "/stream")  # the routes that take memory and model time: counted by `Admission`
RETRY_AFTER = "1"  # seconds, on a 503 past the admission limit


@dataclass
class ServeOptions:
    """What `punctkit serve` was asked for."""

    host: str = "127.0.0.1"
    port: int = 8080
    max_body: int = 1_000_000      # bytes
    batch_wait_ms: float = 5.0
    rate_limit: float | None = None  # requests per second per client; None: off
    log: Path | None = None          # None: stderr
    max_queue: int = 64              # requests in flight (read, queued or labelled; open websockets); 503 beyond
    max_queue_bytes: int = 4_000_000  # their body bytes (declared; else --max-body each); 503 beyond
    allow_hosts: tuple[str, ...] = ()  # Host names accepted besides loopback and --host ('*': any)


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*", re.I)
_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def parse_size(spec: str, option: str = "--max-body") -> int:
    """Bytes of a size such as `1MB`, `512KB`, `64KiB` or `1000000` (K, M, G: powers of 1000; Ki, Mi, Gi: of 1024)."""
    m = _SIZE.fullmatch(spec)
    if not m or float(m.group(1)) <= 0:
        raise PunctkitError(f"{option}: expected a size such as 1MB, 512KB or 1000000, got {printable(repr(spec))}")
    unit = (m.group(2) or "").lower().rstrip("b")
    return int(float(m.group(1)) * _UNITS[unit])


def parse_rate(spec: str | None) -> float | None:
    """Requests per second from `N` or `N/s` (None: no limit)."""
    if spec is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(/\s*s)?\s*", spec)
    if not m or float(m.group(1)) <= 0:
        raise PunctkitError(f"--rate-limit: expected requests per second per client, e.g. 10 or 10/s, got '{spec}'")
    return float(m.group(1))


def host_name(value: str) -> str | None:
    """The name in a Host header value (or an --allow-host): lowercase, without its port, the brackets
    of an IPv6 address or a final dot; None when it is not a host name at all."""
    v = value.strip().lower()
    if v.startswith("["):
        name, close, rest = v[1:].partition("]")
        if not close or (rest and not re.fullmatch(r":\d{1,5}", rest)):
            return None
    elif v.count(":") > 1:  # an IPv6 address without brackets (as --host takes it)
        name = v
    else:
        name, colon, port = v.partition(":")
        if colon and not re.fullmatch(r"\d{1,5}", port):
            return None
    name = name.rstrip(".") if name not in (".", "") else ""
    if not name or not re.fullmatch(r"[a-z0-9._~%!$&'()*+,;=:-]+", name):
        return None
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(name).compressed  # one spelling of an address
    return name


def parse_hosts(specs: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The names of `--allow-host` options (`*`: any name); a one-line error for one that is no host name."""
    out = []
    for spec in specs:
        name = "*" if spec.strip() == "*" else host_name(spec)
        if name is None:
            raise PunctkitError(f"--allow-host: expected a host name such as myhost.lan, 10.0.0.5 or *, "
                                f"got {printable(repr(spec))}")
        out.append(name)
    return tuple(out)


class HostCheck:
    """Which Host (and Origin) a request may name: against DNS rebinding, where a web page the user visits
    names its own host for the loopback address, and against pages of other sites that open a
    websocket (or post) to the service. Accepted: loopback names and addresses (`localhost`,
    `127.0.0.1`, `[::1]`, any port), the address the server listens on (`--host`) and `--allow-host`
    names (`*`: any). A request without Host (HTTP/1.0; no browser sends one) is accepted; an Origin
    header, when present, must name an accepted host too."""

    def __init__(self, listen_host: str, allowed: tuple[str, ...] = ()):
        self.names = {*LOOPBACK_NAMES, *allowed}
        if (h := host_name(listen_host)) is not None:
            self.names.add(h)
        self.any = "*" in self.names

    def accepts(self, name: str | None) -> bool:
        """Whether a host name (`host_name`'s form) is accepted."""
        if self.any:
            return True
        if name is None:
            return False
        if name in self.names:
            return True
        with contextlib.suppress(ValueError):
            return ipaddress.ip_address(name).is_loopback
        return False

    def refusal(self, request: web.BaseRequest) -> str | None:
        """Why the request's Host or Origin is not accepted; None when both are."""
        host = request.headers.get("Host")
        if host is not None and not self.accepts(host_name(host)):
            return f"host {printable(repr(host[:100]))} is not allowed (a guard against DNS rebinding); " \
                   f"accepted: {self.shown()}; name others with --allow-host"
        origin = request.headers.get("Origin")
        if origin is not None:
            try:
                name = host_name(urlsplit(origin).netloc) if "://" in origin else None
            except ValueError:
                name = None
            if not self.accepts(name):
                return f"origin {printable(repr(origin[:100]))} is not allowed (a page of another site); " \
                       f"accepted hosts: {self.shown()}; name others with --allow-host"
        return None

    def shown(self) -> str:
        """The accepted names, for messages."""
        return ", ".join(f"[{n}]" if ":" in n else n for n in sorted(self.names))


@dataclass
class Admission:
    """The requests in flight (a POST /punctuate read, queued or labelled; an open /stream websocket) and
    their body bytes: past `max_requests` or `max_bytes`, a request is refused (503) before its body is
    read, so the memory of a flood is bounded (a body read into words takes about 100 times its bytes
    until it is answered). One request is always admitted when none is in flight. A body's bytes are
    its declared Content-Length, or `max_body` when it has none (chunked) or is compressed (its decoded
    size is what is held). A websocket counts as a request of no bytes: it holds one message (at most
    `max_body`) at a time, and messages are labelled one at a time on the model's thread."""

    max_requests: int
    max_bytes: int
    max_body: int
    requests: int = 0
    bytes: int = 0
    refused: int = 0

    def size(self, request: web.BaseRequest) -> int:
        """The bytes a request holds in flight (at most `max_body`: larger ones are 413s)."""
        if request.path == "/stream":
            return 0
        n = request.content_length
        if n is None or request.headers.get("Content-Encoding", "identity").lower() != "identity":
            return self.max_body
        return min(n, self.max_body)

    @contextlib.contextmanager
    def slot(self, size: int) -> Iterator[bool]:
        """Whether a request of `size` bytes is admitted; the slot is given back on leaving."""
        if self.requests and (self.requests >= self.max_requests or self.bytes + size > self.max_bytes):
            self.refused += 1
            yield False
            return
        self.requests += 1
        self.bytes += size
        try:
            yield True
        finally:
            self.requests -= 1
            self.bytes -= size


class RateLimit:
    """A token bucket per client address: `rate` requests a second, bursts of up to `rate` (at least 1)."""

    def __init__(self, rate: float, max_clients: int = 10000):
        self.rate, self.burst, self.max_clients = rate, max(1.0, rate), max_clients
        self.buckets: dict[str, tuple[float, float]] = {}

    def allow(self, client: str, now: float) -> bool:
        """Take a token for `client`; False when it has none left."""
        tokens, last = self.buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if len(self.buckets) >= self.max_clients and client not in self.buckets:
            self.buckets.clear()  # bounded memory: forget idle clients all at once
        self.buckets[client] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
        return tokens >= 1
