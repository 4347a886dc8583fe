"""A /punctuate body read, labelled and written, with no HTTP: decoded by punctkit's one decoder and read
into utterances by the format registry's reader for its format, given or detected (`parse_body`);
labelled in batches, one `Engine.label` call per kind of request (`label_batch`); written by
punctuate's own writer (`render`, through `punctuator.write_units`) in the format asked for, else a
default one (`output_format`)."""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Callable

from punctkit.data.formats import AsrUtterance, Format, StreamLines, TextInput, detect_for, get_format, names
from punctkit.data.formats.protocol import ReadContext
from punctkit.data.labels import default_substitution
from punctkit.files import PunctkitError, decode_lines, parse_json
from punctkit.infer.engine import Engine, Labelled
from punctkit.infer.render import Casing
from punctkit.punctuator import OUTPUT_FORMATS, output_options, write_units

REQUEST = "request"  # the body's name: in errors (`request:2: ...`) and in ids made for lines without one
TIMED_JSON = "timed-json"  # the default output for words with times, when the registry has it


@dataclass
class Parsed:
    """One request body read into utterances (`units`), and those as its reader gives them to the engine
    (`runs`: each stream's together, an stm's recording; None: each its own stream)."""

    reader: Format
    units: list[AsrUtterance]
    words: int
    runs: list[StreamLines] | None = None


@dataclass
class Request:
    """One /punctuate request's utterances, and how they are labelled (`forced`: their own marks are
    kept) and shown (`casing`)."""

    parsed: Parsed
    forced: bool = False
    casing: Casing | None = None

    @property
    def streams(self) -> list[StreamLines]:
        """What `Engine.label` takes for it: each utterance, or (plain-text lines) all lines as one stream, or
        (an stm's recording) each of the reader's streams, so that a batch of requests never runs one
        request's stream into the next's."""
        units, runs = self.parsed.units, self.parsed.runs
        if self.parsed.reader.one_stream and units:
            return [StreamLines(units)]
        return runs if runs is not None else [StreamLines([u]) for u in units]


def body_text(body: bytes, charset: str | None) -> str:
    """The body as text, by punctkit's one decoder (`decode_lines`): in `charset` (the request's; a text
    encoding, utf-16 big-endian without a BOM), else UTF-8 or UTF-16/32 by its BOM. Bytes that do not
    decode are a one-line error naming the request's line, the byte and its charset."""
    return "".join(text + "\n" for _, text in decode_lines(io.BytesIO(body), REQUEST, charset, option="charset"))


def check_json(text: str) -> None:
    """A body sent as JSON must be a JSON document or JSON lines; else one line naming the first bad line."""
    try:
        parse_json(text)
        return
    except ValueError:
        pass
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                parse_json(line)
            except json.JSONDecodeError as e:
                raise PunctkitError(f"{REQUEST}:{i}: not valid JSON ({e.msg} at column {e.colno})") from None


def parse_body(punct: Engine, body: bytes, input_format: str | None = None,
               charset: str | None = None, as_json: bool = False) -> Parsed:
    """The body's utterances (`body_text`; `as_json`: checked by `check_json`), read in memory by the
    registry's reader for its format (given, else detected) as the text `request`: errors name it
    (`request:2: ...`), and lines without ids are `request-LINENO` (`request-000001`), the same on
    every request."""
    text = body_text(body, charset)
    if as_json:
        check_json(text)
    src = TextInput(REQUEST, text)
    reader = (get_format(input_format, "units", "input format") if input_format
              else detect_for(src, "units", None, "serve", "the input_format parameter"))
    inv = punct.inventory
    runs = list(reader.streams(src, ReadContext.of(src, inv, default_substitution(inv), told=bool(input_format))))
    units = [u for run in runs for u in run.lines]
    return Parsed(reader, units, sum(len(u.words) for u in units), runs)


class Dropped(Exception):
    """A batch's labelling stopped because every request in it was dropped (its client left)."""


def label_batch(punct: Engine, requests: list[Request],
                dropped: Callable[[], bool] | None = None) -> list[list[Labelled]]:
    """The labelled utterances of several requests, split back per request: one `Engine.label` call
    over every request alike (forced marks, casing), each utterance its own stream (plain-text lines:
    one stream), so batching never changes a label. `dropped` (asked before each chunk of words is
    decoded: `Engine.label`'s `stop`): when it says True, labelling stops there (`Dropped`)."""

    def stop() -> None:
        """`Engine.label`'s check before each chunk: `Dropped` once `dropped` says so."""
        if dropped is not None and dropped():
            raise Dropped("every request of the batch was dropped")

    out: list[list[Labelled]] = [[] for _ in requests]
    kinds: dict[tuple[bool, bool, bool], list[int]] = {}
    for k, r in enumerate(requests):
        casing = r.casing or punct.casing()
        kinds.setdefault((r.forced, casing.capitalize, casing.recase), []).append(k)
    for ks in kinds.values():
        first = requests[ks[0]]
        done = punct.label([s for k in ks for s in requests[k].streams], forced=first.forced, casing=first.casing,
                           stop=stop)
        for k in ks:
            out[k] = [next(done) for _ in requests[k].parsed.units]
    return out


def has_times(units: list[AsrUtterance]) -> bool:
    """Whether any word came with a start time."""
    return any(isinstance(r, dict) and (r.get("start_s") if "start_s" in r else r.get("start")) is not None
               for u in units for r in u.records)


def default_format(parsed: Parsed) -> str:
    """Timed output for words that came with times (timed JSON once the registry has it, else the input's
    own format when punctuate writes it, which keeps the times); else readable text."""
    if parsed.reader.times and has_times(parsed.units):
        for name in (TIMED_JSON, parsed.reader.name):
            if name in names("emit"):
                return name
    return "readable"


def output_format(name: str | None, parsed: Parsed) -> Format:
    """The output format asked for, else `default_format`."""
    name = name or default_format(parsed)
    fmt = get_format(name, "emit", "output format", OUTPUT_FORMATS)
    if fmt.directory:
        raise PunctkitError(f"format {name} is a directory, which a response cannot be")
    if fmt.needs_times and not parsed.reader.times:
        raise PunctkitError(f"format {name} needs word times; the request is {parsed.reader.name}, which has none")
    return fmt


def render(punct: Engine, parsed: Parsed, labelled: list[Labelled], fmt: Format) -> str:
    """The response body, written by punctuate's writer (`write_units`) to a text stream in memory."""
    out = io.StringIO()
    write_units(fmt, labelled, output_options(punct), out, REQUEST)
    return out.getvalue()
