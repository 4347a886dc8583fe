"""One-line errors of `punctkit serve`: a JSON answer `{"error": "one line"}` (`error`), the line for a
bug (`internal_error`) and for an error aiohttp found itself (`framework_message`), and text made safe
for a terminal and a log line (`printable`)."""
from __future__ import annotations

import re

from aiohttp import web
from aiohttp.http import HttpProcessingError


def printable(text: str) -> str:
    """`text` on one line with nothing a terminal acts on: control and format characters (ESC, BEL,
    backspace, newlines, bidi controls) written as escapes (`\\x1b`)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") if ord(c) < 0x10000
                   else f"\\U{ord(c):08x}" for c in text)


def internal_error(e: Exception) -> str:
    """The one-line answer to a bug (the server goes on): its type and the first line of its message."""
    first = (str(e).strip().splitlines() or [""])[0][:200]
    return f"internal error: {type(e).__name__}: {first}"


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON error, `{"error": "one line"}`."""
    return web.json_response({"error": " ".join(message.split())}, status=status, headers=headers)


def framework_message(exc: BaseException | None, message: str | None, status: int) -> str:
    """One line for an error aiohttp found itself (`Invalid header token:\\n\\n  b'x'\\n   ^`: the
    caret lines dropped, the rest joined)."""
    if isinstance(exc, web.RequestPayloadError):  # a body aiohttp could not read: its parser's error inside
        cause = exc.__cause__
        exc = cause if isinstance(cause, HttpProcessingError) else None
        message = message or re.sub(r"^\d{3}, message:\s*", "", str(cause or ""))
    if isinstance(exc, HttpProcessingError):
        message = exc.message if isinstance(exc.message, str) else str(exc.message)
    if status == 500 and exc is not None and not isinstance(exc, HttpProcessingError):
        return internal_error(exc) if isinstance(exc, Exception) else f"internal error: {type(exc).__name__}"
    if status == 504:
        return "request: timed out"
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    text = " ".join(lines)[:300] or f"HTTP {status}"
    return f"bad request: {text}" if status == 400 else text
