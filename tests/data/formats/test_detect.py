"""Format detection from content (one detector for every command) and text encodings.

Each file of tests/bad_inputs/detect/ is a case that was once read silently as plain
text (every label lost) or crashed; here each is either read with its labels or
refused with one line naming file and line.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from punct_util import PK, cli, cli_error, units_of
from punctkit.data.formats import Report, detect_for, detect_format, read
from punctkit.data.formats.asr import ctm_units, jsonl_units
from punctkit.data.formats.base import input_lines
from punctkit.data.labels import default_substitution, get_inventory
from punctkit.files import PunctkitError, iter_lines, sample_lines

BAD = Path(__file__).parents[2] / "bad_inputs" / "detect"
WORDS = ["so", "if", "we", "do", "n't", "go", "what", "then"]
LABELS = ["COMMA", "O", "O", "O", "O", "PERIOD", "O", "QUESTION"]


def detect_input_format(src: Path | str) -> str:
    """The format punctuate detects (an error for formats it does not read)."""
    return detect_for(src, "units", command="punctuate", option="--input-format").name


# ------------------------------------------------------------------ the files of bad_inputs/detect

@pytest.mark.parametrize("name,msg", [
    ("unknown_label_head.tsv", r"unknown_label_head.tsv:4: unknown label 'BANANA'"),
    ("three_column.tsv", r"three_column.tsv:3: expected 'word<TAB>LABEL', got 3 fields"),
])
def test_bad_line_in_the_head_is_an_error_not_plain_text(name, msg, tmp_path):
    with pytest.raises(PunctkitError, match=msg):
        read(BAD / name)
    line = cli_error(cli("convert", BAD / name, tmp_path / "out", "--to", "twocol", ok=False))
    assert str(BAD / name) in line
    assert not (tmp_path / "out").exists()


def test_space_separated_two_columns_keep_their_labels(tmp_path):
    assert detect_format(BAD / "space_twocol.txt") == "twocol"
    utts, inv = read(BAD / "space_twocol.txt")
    assert utts[0].words == WORDS and utts[0].labels == LABELS
    r = cli("prepare", BAD / "space_twocol.txt", "-o", tmp_path / "d")
    assert "repairs: 0" in r.stdout
    assert (tmp_path / "d" / "labels").read_text().split()[1:] == LABELS


def test_utf16_with_bom_is_decoded(tmp_path):
    assert detect_format(BAD / "utf16_bom.tsv") == "twocol"
    utts, _ = read(BAD / "utf16_bom.tsv")
    assert utts[0].words == WORDS[:6] + ["café", "then"]
    assert utts[0].labels == LABELS
    cli("convert", BAD / "utf16_bom.tsv", tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "so, if we do n't go. café then?\n"


def test_utf8_bom_is_stripped_not_repaired():
    rep = Report()
    utts, _ = read(BAD / "utf8_bom.tsv", report=rep)
    assert utts[0].words == WORDS and utts[0].labels == LABELS
    assert sum(rep.repairs.values()) == 0


def test_latin1_is_an_error_naming_line_and_offset_unless_encoding_given(tmp_path):
    src = BAD / "latin1.tsv"
    offset = src.read_bytes().index(b"\xe9")
    with pytest.raises(PunctkitError, match=rf"latin1.tsv:7: byte 0xe9 at offset {offset} is not UTF-8; "
                                            r"give --encoding latin-1"):
        read(src)
    cli_error(cli("stats", src, ok=False))
    utts, _ = read(src, encoding="latin-1")
    assert utts[0].words[6] == "café" and utts[0].labels == LABELS
    r = cli("stats", src, "--encoding", "latin-1")
    assert "words" in r.stdout and " 8 " in r.stdout
    cli("convert", src, tmp_path / "o.txt", "--encoding", "latin-1")
    assert "café" in (tmp_path / "o.txt").read_text(encoding="utf-8")
    cli_error(cli("convert", src, tmp_path / "o2.txt", "--encoding", "klingon", ok=False))


def test_kaldi_text_by_content_not_name():
    assert detect_format(BAD / "kaldi_by_content.txt") == "kaldi_text"
    utts, _ = read(BAD / "kaldi_by_content.txt")
    assert [u.uttid for u in utts] == ["talk1-0001", "talk1-0002"]
    assert utts[0].words[:2] == ["So", "if"]


def test_ctm_and_jsonl_by_content_for_punctuate_only(tmp_path):
    assert detect_input_format(BAD / "asr_words.txt") == "ctm"
    assert detect_input_format(BAD / "asr_words.log") == "jsonl"
    for name in ("asr_words.txt", "asr_words.log"):  # not silently read as text by convert
        with pytest.raises(PunctkitError, match=rf"{name}: looks like (ctm|jsonl).*give --from"):
            read(BAD / name)
    with pytest.raises(PunctkitError, match=r"looks like twocol, which punctuate does not read"):
        detect_input_format(BAD / "space_twocol.txt")


def test_ambiguous_content_asks_for_the_format(tmp_path):
    line = cli_error(cli("convert", BAD / "ambiguous.txt", tmp_path / "o", ok=False))
    assert "ambiguous.txt: cannot tell its format: 2 of 6 sampled lines look like twocol" in line
    cli("convert", BAD / "ambiguous.txt", tmp_path / "o", "--from", "text")  # the option settles it
    assert (tmp_path / "o").read_text().startswith("So, if we go.\n")


# ------------------------------------------------------------------ rules

def test_explicit_format_wins(tmp_path):
    utts, _ = read(BAD / "space_twocol.txt", "text")
    assert utts[0].words == ["so", "COMMA"]
    cli("convert", BAD / "space_twocol.txt", tmp_path / "o", "--from", "text", "--to", "text")
    assert (tmp_path / "o").read_text().startswith("so COMMA\n")


def test_bad_line_after_line_50_and_in_the_head_give_the_same_kind_of_error(tmp_path):
    lines = [f"w{k}\tO" for k in range(200)]
    for at in (10, 120):
        bad = list(lines)
        bad[at - 1] = "x\tO\tO"
        p = tmp_path / f"f{at}"
        p.write_text("\n".join(bad) + "\n")
        with pytest.raises(PunctkitError, match=rf"f{at}:{at}: expected 'word<TAB>LABEL', got 3 fields"):
            read(p)


def test_sample_reaches_beyond_the_head(tmp_path):
    """A large file whose first 80 KiB are prose but which is two-column after that."""
    p = tmp_path / "big"
    with open(p, "w") as f:
        f.writelines("This is a line of prose, nothing more.\n" for _ in range(2000))
        f.writelines(f"w{k}\tCOMMA\n" for k in range(200_000))
    assert len(sample_lines(p)) < 20_000  # bounded
    assert detect_format(p) == "twocol"
    with pytest.raises(PunctkitError, match=r"big:1: expected 'word<TAB>LABEL', got 8 fields"):
        read(p)


def test_a_few_mark_tokens_in_text_are_not_read_as_words(tmp_path):
    p = tmp_path / "p2.txt"
    p.write_text("".join(f"line {k} without marks\n" for k in range(30)) + "so ,COMMA we\nthen .PERIOD\n")
    with pytest.raises(PunctkitError, match=r"p2.txt: cannot tell its format: 2 of 32 sampled lines look like "
                                            r"punctuator2"):
        read(p)


def test_plain_text_stays_plain_text(tmp_path):
    p = tmp_path / "talk.txt"
    p.write_text("Thank you. I AM here.\nSo, what YES?\nGood NIGHT\nAnd then we left.\nOK.\nFine, thanks.\n")
    assert detect_format(p) == "text"
    (tmp_path / "text").write_text("a Hello there.\nb Bye now.\n")  # ids without digits: the name decides
    assert detect_format(tmp_path / "text") == "kaldi_text"
    (tmp_path / "t2").write_text("a Hello there.\nb Bye now.\n")
    assert detect_format(tmp_path / "t2") == "text"


def test_uppercase_one_word_kaldi_utterances_are_not_twocol(tmp_path):
    p = tmp_path / "asr"
    p.write_text("utt1 YES\nutt2 NO\nutt3 HELLO\n")
    assert detect_format(p) == "kaldi_text"


def test_custom_labels_are_twocol_with_errors_not_text(tmp_path):
    p = tmp_path / "x"
    p.write_text("the\tNONE\nend\tFULLSTOP\nthe\tNONE\n")
    assert detect_format(p) == "twocol"
    with pytest.raises(PunctkitError, match=r"x:1: unknown label 'NONE'"):
        read(p)


def test_non_regular_file_is_detected_from_its_head(tmp_path):
    """A device or pipe is read once, its format detected from its head (issue 56; FIFOs:
    tests/contracts/test_reliability_streams.py)."""
    assert detect_format("/dev/null") == "text"


# ------------------------------------------------------------------ decoding

@pytest.mark.parametrize("enc", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_bom_encodings_and_crlf(tmp_path, enc):
    p = tmp_path / "f"
    data = "héllo\tO\r\nwörld\tPERIOD\r\n".encode(enc)
    if enc == "utf-16-be":
        data = b"\xfe\xff" + data
    p.write_bytes(data)
    assert list(iter_lines(p)) == [(1, "héllo\tO"), (2, "wörld\tPERIOD")]
    assert list(iter_lines(p, (2, 2))) == [(2, "wörld\tPERIOD")]


def test_bad_utf16_names_line_and_offset(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"\xff\xfe" + "a\nb\n".encode("utf-16-le") + b"\x00\xdc" + "c\n".encode("utf-16-le"))
    with pytest.raises(PunctkitError, match=r"f:3: byte 0x00 at offset 10 is not utf-16-le"):
        list(iter_lines(p))


def stdin_of(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_stdin_is_decoded_as_files_are(monkeypatch):
    stdin_of(monkeypatch, "ok\ncafé\n".encode("latin-1"))
    with pytest.raises(PunctkitError, match=r"stdin:2: byte 0xe9 at offset 6 is not UTF-8"):
        list(input_lines("-"))
    stdin_of(monkeypatch, "ok\ncafé\n".encode("latin-1"))
    assert list(input_lines("-", "latin-1")) == [(1, "ok"), (2, "café")]
    stdin_of(monkeypatch, b"\xef\xbb\xbfutt1 so\n")
    assert list(input_lines("-")) == [(1, "utt1 so")]


def test_stdin_detection_hands_its_sample_back(monkeypatch):
    inv = get_inventory("4class")
    rules = default_substitution(inv)
    stdin_of(monkeypatch, (BAD / "asr_words.txt").read_bytes())
    assert detect_input_format("-") == "ctm"
    assert [u.words for u in units_of(ctm_units, "-", inv, rules)] == [["so", "if", "we"], ["well"]]
    stdin_of(monkeypatch, (BAD / "asr_words.log").read_bytes())
    assert detect_input_format("-") == "jsonl"
    assert [u.uttid for u in units_of(jsonl_units, "-", inv, rules)] == ["utt1", "utt2"]


def test_score_reads_utf16_and_latin1(tmp_path):
    ref = tmp_path / "ref"
    ref.write_text("\n".join(f"{w}\t{lab}" for w, lab in zip(WORDS, LABELS)) + "\n")
    r = cli("score", ref, BAD / "utf16_bom.tsv", "--align", "--json")
    assert json.loads(r.stdout)["overall"]["f1"] == 100.0  # café aligned as a substitution, labels all equal
    cli_error(cli("score", ref, BAD / "latin1.tsv", "--align", ok=False))
    cli("score", ref, BAD / "latin1.tsv", "--align", "--encoding", "latin-1")


def test_cli_prepare_punctuate_have_encoding():
    for cmd in ("prepare", "convert", "score", "punctuate", "stats"):
        r = subprocess.run(PK + [cmd, "--help"], capture_output=True, text=True)
        assert "--encoding" in r.stdout, cmd
