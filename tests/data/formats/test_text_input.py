"""The format registry's text-stream form: readers and detection take a `TextInput` (a text already
decoded, with a name: serve's request body) through the same parser as a file, and `write` writes
to a text stream what it writes to a file. For every input here, a file and the same text as a
`TextInput` of the file's name give the same format, the same utterances (ids included) and the
same errors, the file's path in them standing as the name."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from punct_util import units_of
from punctkit.data.formats import REGISTRY, TextInput, Utterance, detect_format, get_format, names, read, write
from punctkit.data.labels import INVENTORIES, default_substitution
from punctkit.files import PunctkitError, iter_lines

BAD = Path(__file__).parents[2] / "bad_inputs"
INV = INVENTORIES["4class"]
UTTS = [Utterance("a-1", ["so", "if", "we", "go", "what", "then"], ["COMMA", "O", "O", "PERIOD", "O", "QUESTION"]),
        Utterance("a-2", ["well", "it", "'s", "fine"], ["COMMA", "O", "O", "PERIOD"])]

WHISPER = {"text": "so we go", "segments": [
    {"start": 0.0, "end": 1.0, "text": " so we", "words": [{"word": " so", "start": 0.0, "end": 0.2},
                                                         {"word": " we,", "start": 0.3, "end": 0.5}]},
    {"start": 1.0, "end": 2.0, "text": " go now"}]}
# inputs written here (name, content): every kind of line ending, and inputs each reader refuses
MADE = [
    ("plain.txt", "so if we go\r\nwhat then\n\nwell it 's fine\r\r\nno newline"),
    ("empty.txt", ""),
    ("blank.txt", "\n"),
    ("ids.txt", "utt1 so if we go\nutt2 what then\n\nutt3 well\n"),
    ("dup.txt", "utt1 so if we go\nutt2 what then\nutt1 again\n"),
    ("a.ctm", "u1 1 0.00 0.25 so 0.9\nu1 1 0.30 0.25 we, 0.9\n;; comment\nu2 1 1.0 0.2 go\n"),
    ("bad.ctm", "u1 1 0.00 0.25 so\nu1 1 x 0.25 we\n"),
    ("split.ctm", "u1 1 0 1 so\nu2 1 0 1 we\nu1 1 2 1 go\n"),
    ("a.jsonl", '{"id": "u1", "words": [{"word": "so", "start": 0.1, "end": 0.3}, "we"]}\n{"text": "go now"}\n'),
    ("bad.jsonl", '{"id": "u1", "text": "so"}\n{"id": "u2", "words": 3}\n'),
    ("badjson.jsonl", '{"id": "u1", "text": "so"}\n{"id": \n{"id": "u3", "text": "go"}\n'),
    ("w.json", json.dumps(WHISPER, indent=1)),
    ("two.json", json.dumps(WHISPER) + "\n" + json.dumps(WHISPER)),
    ("nemo.json", '{"audio_filepath": "a.wav", "pred_text": "so we go"}\n{"audio_filepath": "b.wav", "text": "ok"}\n'),
    ("vosk.json", '{"partial": "so"}\n{"result": [{"word": "so", "start": 0, "end": 0.2, "conf": 1}], '
                  '"text": "so"}\n{\n "text": "we go"\n}\n'),
    ("tc.tsv", "so\tCOMMA\nif\tO\n\nwe\tPERIOD\n"),
    ("badtc.tsv", "so\tCOMMA\nif\tO\tO\n"),
    ("p2.txt", "so ,COMMA if we go .PERIOD\nwhat ?QUESTIONMARK\n"),
    ("badp2.txt", "so ,COMMA if ,BANANA\n"),
    ("mixed.txt", "so\tCOMMA\nhello there\nwe ,COMMA go\nok .PERIOD now\nmore words here\nand here\n"),
]
FILES = sorted(p for d in ("detect", "words", "json") for p in (BAD / d).iterdir() if p.suffix != ".py")


def outcome(fn: Callable[[], Any], path: Path | None = None) -> tuple[str, Any]:
    """("ok", the value) or ("error", the message, the file's path in it standing as its name)."""
    try:
        return "ok", fn()
    except PunctkitError as e:
        return "error", str(e).replace(str(path), path.name) if path else str(e)


def file_and_text(path: Path) -> tuple[TextInput, str | None]:
    """The file as a `TextInput` of its name, decoded as punctkit decodes it; the encoding that needed."""
    for enc in (None, "latin-1"):
        try:
            return TextInput(path.name, "".join(line + "\n" for _, line in iter_lines(path, None, enc))), enc
        except PunctkitError:
            continue
    raise AssertionError(path)


@pytest.fixture(params=[m[0] for m in MADE] + [f"{p.parent.name}/{p.name}" for p in FILES])
def source(request, tmp_path) -> tuple[Path, TextInput, str | None]:
    made = dict(MADE)
    if request.param in made:
        path = tmp_path / request.param
        path.write_bytes(made[request.param].encode())
    else:
        path = BAD / request.param
    return (path, *file_and_text(path))


def test_detection_is_the_files(source):
    path, text, enc = source
    assert outcome(lambda: detect_format(text)) == outcome(lambda: detect_format(path, enc), path)


def test_every_reader_reads_the_text_as_the_file(source):
    """punctuate's readers (`units`), ids and line numbers included; and the corpus readers."""
    path, text, enc = source
    rules = default_substitution(INV)
    for name in names("units"):
        entry = get_format(name, "units")
        got = outcome(lambda: units_of(entry, text, INV, rules))
        assert got == outcome(lambda: units_of(entry, path, INV, rules, encoding=enc), path), name
    for name in names("reader"):
        if not REGISTRY[name].directory:
            got = outcome(lambda: read(text, name, "4class"))
            assert got == outcome(lambda: read(path, name, "4class", encoding=enc), path), name


def test_lines_are_the_decoders():
    """Lines end at `\\n` only, their `\\r`s dropped; no line after a final newline; `span` keeps some."""
    text = TextInput("t", "a\r\nb\rc\r\r\n\nd")
    assert list(text.lines()) == [(1, "a"), (2, "b\rc"), (3, ""), (4, "d")]
    assert list(text.lines((2, 3))) == [(2, "b\rc"), (3, "")]
    assert [list(TextInput("t", s).lines()) for s in ("", "\n", "x\n")] == [[], [(1, "")], [(1, "x")]]
    assert str(text) == "t"


@pytest.mark.parametrize("kind", ["jsonl", "kaldi", "mixed"])
def test_a_large_text_is_sampled_as_a_file(tmp_path, kind):
    """Over 128 KiB detection samples the head and slices, of a text as of a file (ASCII: the same cuts)."""
    rows = {"jsonl": lambda k: json.dumps({"id": f"u{k}", "text": "so we go now"}),
            "kaldi": lambda k: f"utt{k} so we go now and then" if k % 40 else f"so we go {k}",
            "mixed": lambda k: "so\tCOMMA" if k < 6000 or k % 7 == 0 else f"we go {k} now"}[kind]
    body = "".join(rows(k) + "\n" for k in range(20000))
    assert len(body) > 1 << 17
    (tmp_path / "big").write_text(body)
    got = outcome(lambda: detect_format(TextInput("big", body)))
    assert got == outcome(lambda: detect_format(tmp_path / "big"), tmp_path / "big")


@pytest.mark.parametrize("fmt", [n for n in names("writer") if not REGISTRY[n].directory])
def test_write_to_a_text_stream_is_the_file(tmp_path, fmt):
    out = io.StringIO()
    write(UTTS, out, fmt, INV)
    write(UTTS, tmp_path / "f", fmt, INV)
    assert out.getvalue() == (tmp_path / "f").read_text(encoding="utf-8") != ""
    back, _ = read(TextInput("f", out.getvalue()), fmt)
    assert [(u.words, u.labels) for u in back] == [(u.words, u.labels) for u in UTTS]


def test_a_directory_format_is_no_text():
    with pytest.raises(PunctkitError, match="format datadir is a directory, which a text stream cannot hold"):
        write(UTTS, io.StringIO(), "datadir", INV)
    with pytest.raises(PunctkitError, match="^body: format datadir is a directory"):
        read(TextInput("body", "so we go\n"), "datadir")


def test_ids_made_for_lines_without_ids_name_the_text():
    """Inputs without ids are NAME-LINENO (one-stream segments NAME-K), as a file's are FILE-LINENO."""
    rules = default_substitution(INV)
    units = units_of(REGISTRY["text"], TextInput("request", "so we go\n\nwhat then\n"), INV, rules)
    assert [u.uttid for u in units] == ["request-000001", "request-000002", "request-000003"]
    jsonl = TextInput("request", '{"text": "so"}\n{"id": "u2", "text": "we"}\n')
    units = units_of(REGISTRY["jsonl"], jsonl, INV, rules)
    assert [u.uttid for u in units] == ["request-000001", "u2"]
    with pytest.raises(PunctkitError, match=r"^request:3: duplicate utterance id 'u1'$"):
        units_of(REGISTRY["kaldi_text"], TextInput("request", "u1 so\nu2 we\nu1 go\n"), INV, rules)
