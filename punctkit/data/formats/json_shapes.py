"""The JSON formats punctuate reads, in one table (`SHAPES`), and how a JSON input is told apart by it.

Each entry is one format: the recognizers' outputs (recognizers.py: Whisper, NeMo, Vosk, DeepSpeech, Azure
Speech, PocketSphinx) and the ASR services' transcripts (services.py, whose `SERVICES` give their shapes and
their pure `*_turns(doc)` functions): what it is, the keys that tell it (messages, `punctkit formats`), whether a
top-level object is of its shape (`claims`), the markers that tell a document too long to decode from its head,
and its reader. The registry's JSON entries are made from it, and every JSON detector asks it: `object_kinds`
(a value's formats), `json_line_kind` (a line's), `json_kind` (an input's, from its head), `head_key_kind`.
A JSON object with no shape of the table is generic JSON lines (`jsonl`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from punctkit.data.formats import recognizers
from punctkit.data.formats.json_docs import json_values
from punctkit.data.formats.protocol import Reader
from punctkit.data.formats.services import SERVICES, service_units
from punctkit.files import PunctkitError, parse_json

ASK = "give --input-format"


@dataclass(frozen=True)
class JsonShape:
    """One JSON format of punctuate's inputs (module docstring). `by_keys`: told by its top-level `keys` alone
    (KIND_KEYS); `service`: an ASR service's transcript, whose markers are looked for first. `emit`: its own
    punctuate writer (NeMo's manifest written back); `times`, `one_stream`: as the registry's entries say."""

    name: str
    summary: str
    keys: tuple[str, ...]
    claims: Callable[[dict[str, Any]], bool]
    units: Reader
    markers: tuple[str, ...] = ()
    by_keys: bool = False
    service: bool = False
    emit: Callable[..., Any] | None = None
    times: bool = True
    one_stream: bool = True


def keyed(name: str, summary: str, keys: tuple[str, ...], units: Reader, **kw: Any) -> JsonShape:
    """A format told by its top-level keys: an object with any of them is its (its markers: the keys quoted)."""
    return JsonShape(name, summary, keys, lambda o: any(k in o for k in keys), units,
                     tuple(f'"{k}"' for k in keys), by_keys=True, **kw)


SHAPES: dict[str, JsonShape] = {s.name: s for s in [
    keyed("whisper", "Whisper JSON with `segments[].words[]` (openai-whisper, faster-whisper, WhisperX)",
          ("segments", "transcription"), recognizers.whisper_units),
    keyed("nemo", "a NeMo JSON-lines manifest (`pred_text`, else `text`); written back with "
          "`pred_text_punctuated`", ("pred_text", "audio_filepath", "pred_text_punctuated"), recognizers.nemo_units,
          emit=recognizers.nemo_out, times=False, one_stream=False),
    keyed("vosk", "Vosk results (`result[]` of word, start, end, conf), one or several objects",
          ("result", "partial", "alternatives"), recognizers.vosk_units),
    keyed("deepspeech", "DeepSpeech's and Coqui STT's --json (`transcripts[].words[]` of word, start_time, "
          "duration): the most confident transcript", ("transcripts",), recognizers.deepspeech_units),
    keyed("azure-speech", "Azure Speech SDK / REST results (`NBest[].Words[]`, ticks), a phrase an object",
          ("NBest", "RecognitionStatus", "DisplayText"), recognizers.azure_speech_units),
    JsonShape("pocketsphinx", "PocketSphinx's JSON lines (`{\"b\", \"d\", \"t\", \"w\": [...]}` an utterance), "
              "one stream", ("b", "d", "t"), recognizers.pocketsphinx_shape, recognizers.pocketsphinx_units),
    *[JsonShape(s.name, f"{s.summary}: one recording, a unit a {s.unit}", s.keys, s.claims, service_units(s.name),
                s.markers, service=True) for s in SERVICES.values()],
]}
# the keys that tell the formats told by their top-level keys alone
KIND_KEYS = {s.name: s.keys for s in SHAPES.values() if s.by_keys}


def object_kinds(obj: Any) -> set[str]:
    """The formats whose shape a JSON value has (several: ambiguous; none: generic `jsonl`): each entry of
    SHAPES that claims it (the recognizers' by their top-level keys, PocketSphinx's and the services' by their
    shapes)."""
    if not isinstance(obj, dict):
        return set()
    kinds = {s.name for s in SHAPES.values() if s.claims(obj)}
    if "vosk" in kinds and isinstance(obj.get("transcription"), list) and isinstance(obj.get("result"), dict):
        kinds.discard("vosk")  # whisper.cpp's `"result": {"language": "en"}` beside its transcription
    return kinds


def segment_list(value: Any) -> bool:
    """Whether a JSON value is a list of Whisper segments alone (`recognizers.segment_like`), none with another
    format's keys (`object_kinds`)."""
    return recognizers.segment_like(value) and not any(object_kinds(v) for v in value[:200])


def kind_keys(kind: str) -> tuple[str, ...]:
    """The keys that tell format `kind` (for messages)."""
    return SHAPES[kind].keys


def json_line_kind(line: str) -> str:
    """The line classifier of the JSON formats: for a line holding one JSON object, the kind its keys
    say (`whisper`, `vosk`, `nemo`; `jsonl` for none or several), else ''."""
    s = line.strip()
    if not (s.startswith("{") and s.endswith("}")):
        return ""
    try:
        obj = parse_json(s)
    except ValueError:
        return ""
    if not isinstance(obj, dict):
        return ""
    kinds = object_kinds(obj)
    return kinds.pop() if len(kinds) == 1 else "jsonl"


def json_kind(head: str, complete: bool, source: str) -> str | None:
    """The format of an input whose text starts with `{` or `[` (`head`: its start, or all of it
    when `complete`), or None when its first JSON value cannot be decoded (not JSON: the line
    classifiers decide). A value's top-level keys say its kind (KIND_KEYS); objects without any
    are `jsonl` when each is on one line. Keys of two kinds are an error naming both."""
    values, err = json_values(head, 200)
    if not values:
        if err is None or not head.lstrip().startswith("{"):
            return None
        if not complete:
            return head_key_kind(head)
        lines = [ln for ln in head.splitlines() if ln.strip()]
        if sum(bool(json_line_kind(ln)) for ln in lines) >= 0.5 * len(lines):
            return None  # JSON lines with a bad line: the jsonl reader names it
        raise PunctkitError(f"{source}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno}); "
                            f"{ASK} to read it as another format")
    objs = [v for _, _, v in values]
    if len(objs) == 1 and segment_list(objs[0]):
        return "whisper"
    if len(objs) == 1 and isinstance(objs[0], list):  # a list of results (Vosk)
        objs = objs[0][:200]
    kinds: set[str] = set()
    for obj in objs:
        kinds |= object_kinds(obj)
    if len(kinds) > 1:
        raise PunctkitError(f"{source}: cannot tell its format: its JSON has keys of {' and '.join(sorted(kinds))} "
                            f"({', '.join(k for kind in sorted(kinds) for k in kind_keys(kind))}); {ASK}")
    if kinds:
        return kinds.pop()
    if all(isinstance(v, dict) and "\n" not in head[a:b] for a, b, v in values):
        return "jsonl"
    raise PunctkitError(f"{source}: JSON of no known shape (Whisper has 'segments', Vosk 'result', "
                        f"NeMo 'pred_text', DeepSpeech 'transcripts', Rev.ai 'monologues', AWS and Deepgram 'results', "
                        f"AssemblyAI 'audio_url', Azure 'recognizedPhrases'; JSON lines one object a line); {ASK}")


def head_key_kind(head: str) -> str | None:
    """The kind of a JSON document too long to decode from its head: a service's by its first marker, else
    PocketSphinx's by its start, else the format of the first key of a recognizer's found (SHAPES' markers)."""
    if '"transcription"' in head and '"offsets"' in head:  # whisper.cpp (its `result` is no Vosk's, its
        return "whisper"                                     # `timestamps` no Watson's)
    if kind := first_marker(head, services=True):
        return kind
    if re.match(r'\s*\{\s*"b"\s*:\s*[0-9.]+\s*,\s*"d"\s*:', head):  # PocketSphinx's one long utterance
        return "pocketsphinx"
    return first_marker(head, services=False)


def first_marker(head: str, services: bool) -> str | None:
    """The format of the first marker found in `head` among the services' (`services`) or the others'."""
    found = sorted((pos, s.name) for s in SHAPES.values() if s.service == services for m in s.markers
                   if (pos := head.find(m)) >= 0)
    return found[0][1] if found else None
