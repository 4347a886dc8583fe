"""The page of `punctkit serve` (`GET /`): one self-contained HTML file shipped with punctkit (page.html: no
external resource, no build step) where a person pastes text or chooses (or drops) a transcript file, sees
the model served, picks the output format, and sees and downloads what `POST /punctuate` answers. The
model's name, the output formats and the body limit are written into it here (`build_page`); it is served
under a strict Content-Security-Policy that allows nothing but its own inline script and style (by their
hashes) and requests to its own origin."""
from __future__ import annotations

import base64
import functools
import hashlib
import html
import re
from dataclasses import dataclass
from importlib import resources

from punctkit.data.formats import get_format
from punctkit.punctuator import OUTPUT_FORMATS

PAGE = "page.html"  # package data of punctkit.serve (setup.cfg)
FORMAT_HEADER = "X-Punctkit-Format"  # a /punctuate answer's format (the default one too), for its file's name
# a downloaded answer's file extension, by format (others: txt)
EXTENSIONS = {"ctm": "ctm", "jsonl": "jsonl", "timed-json": "jsonl", "nemo": "json", "nlp": "nlp", "stm": "stm",
              "srt": "srt", "vtt": "vtt", "trn": "trn"}
AUTO = "auto (timed JSON for words with times, else readable)"  # the format select's first choice: the default
_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.S)


@dataclass(frozen=True)
class Page:
    """The page as served: its HTML and its Content-Security-Policy."""

    html: str
    csp: str

    @property
    def headers(self) -> dict[str, str]:
        """The headers it is served with: the policy, and no sniffing, framing, referrer or caching."""
        return {"Content-Security-Policy": self.csp, "X-Content-Type-Options": "nosniff",
                "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


def extension(fmt: str) -> str:
    """The file extension of an answer in format `fmt` (`EXTENSIONS`, else txt)."""
    return EXTENSIONS.get(fmt, "txt")


def page_formats() -> list[str]:
    """The output formats a /punctuate answer can be in: punctuate's, but for a directory."""
    return [n for n in OUTPUT_FORMATS if not get_format(n, "emit", known=OUTPUT_FORMATS).directory]


def option(value: str, text: str, title: str = "", ext: str | None = None) -> str:
    """One `<option>`, its text and attributes escaped."""
    attrs = f' value="{html.escape(value)}"'
    if title:
        attrs += f' title="{html.escape(title)}"'
    if ext is not None:
        attrs += f' data-ext="{html.escape(ext)}"'
    return f"<option{attrs}>{html.escape(text)}</option>"


def csp(page: str) -> str:
    """A Content-Security-Policy for `page`: nothing loaded or embedded from anywhere, its inline scripts
    and styles allowed by their SHA-256 hashes, requests (fetch) to its own origin only."""
    allowed: dict[str, list[str]] = {"script": [], "style": []}
    for kind, body in _INLINE.findall(page):
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
        allowed[kind].append(f"'sha256-{digest}'")
    script, style = (" ".join(allowed[k]) or "'none'" for k in ("script", "style"))
    return (f"default-src 'none'; script-src {script}; style-src {style}; connect-src 'self'; "
            f"base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@functools.lru_cache(maxsize=8)
def build_page(models: tuple[str, ...], max_body: int) -> Page:
    """The page for a server of `models` (their names, as /health says) and a body limit of `max_body`
    bytes: page.html with its model and format choices filled in, and its policy (`csp`)."""
    template = resources.files("punctkit.serve").joinpath(PAGE).read_text("utf-8")
    fields = {
        "model_options": "".join(option(m, m) for m in models),
        "format_options": option("", AUTO) + "".join(
            option(n, n, get_format(n, "emit", known=OUTPUT_FORMATS).summary, extension(n)) for n in page_formats()),
        "max_body": f"{max_body:,}",
        "format_header": FORMAT_HEADER,
    }
    text = re.sub(r"\{\{(\w+)\}\}", lambda m: fields[m.group(1)], template)
    return Page(text, csp(text))
