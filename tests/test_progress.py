"""Progress and quiet: a bar on standard error only when it is a terminal and the input is long (words
done, words/s, the time left where the size is known), never in a pipe or a log; `--quiet` silences the
bar and the summary, not errors or warnings; the summary says what its words/s count."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from conftest import IWSLT
from punct_util import cli
from punctkit.files import iter_lines
from punctkit.files.text_codec import ReadMeter
from punctkit.progress import LONG_BYTES, WordProgress

SUMMARY = re.compile(r"punctuate: ([\d,]+) lines, ([\d,]+) words in ([\d.]+) s \(([\d,]+) words/s reading, labelling "
                     r"and writing; ([\d.]+) s in all, with start-up and loading the model\)")


@pytest.fixture
def long_text(tmp_path) -> Path:
    """Plain words, 100 a line, just over LONG_BYTES (test2011's words, then dev2012's)."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    words: list[str] = []
    for name in ("test2011", "dev2012"):
        with open(IWSLT / name, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    words.append(line.split("\t")[0])
                if sum(map(len, words)) + len(words) > LONG_BYTES + 2000:
                    break
    p = tmp_path / "long.txt"
    p.write_text("".join(" ".join(words[i:i + 100]) + "\n" for i in range(0, len(words), 100)), encoding="utf-8")
    assert p.stat().st_size > LONG_BYTES
    return p


def on_a_terminal(args: list[str], stdin: Path | None = None) -> tuple[int, str]:
    """`punctkit ARGS` with standard error on a pseudo-terminal (80 x 24): its exit status and what the
    terminal got."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    with open(stdin or os.devnull, "rb") as inp:
        p = subprocess.Popen([sys.executable, "-m", "punctkit.cli", *args], stdin=inp, stdout=subprocess.DEVNULL,
                             stderr=slave)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return p.wait(), got.decode("utf-8", "replace")


def test_bar_on_a_terminal_for_a_long_file(long_text, tmp_path):
    """Words done, words/s and the time left (the file's size is known), then cleared for the summary."""
    code, err = on_a_terminal(["punctuate", str(long_text), "-o", str(tmp_path / "out.txt")])
    assert code == 0, err
    assert re.search(r"punctuate: +\d+%\|.*\| \[\d\d:\d\d<", err), err
    assert re.search(r"[\d,]+ words, [\d,]+ words/s\]", err), err
    assert SUMMARY.search(err), err
    assert (tmp_path / "out.txt").read_text().split()  # the work was done


def test_bar_on_a_terminal_for_standard_input_has_no_total(long_text):
    """Standard input's size is unknown: words and words/s, no percentage (once it is long)."""
    code, err = on_a_terminal(["punctuate", "-"], stdin=long_text)
    assert code == 0, err
    assert re.search(r"punctuate: \[\d\d:\d\d, [\d,]+ words, [\d,]+ words/s\]", err), err
    assert "%|" not in err


def test_quiet_on_a_terminal_shows_nothing(long_text, tmp_path):
    code, err = on_a_terminal(["punctuate", str(long_text), "-o", str(tmp_path / "out.txt"), "-q"])
    assert code == 0 and err.strip() == "", err


def test_no_bar_off_a_terminal_and_a_summary_that_says_what_it_counts(long_text, tmp_path):
    """A pipe or a log gets one line: the summary, no bar; its words/s count reading, labelling and writing
    (the model loaded), and the whole run's seconds are given apart."""
    r = cli("punctuate", long_text, "-o", tmp_path / "out.txt")
    assert "%|" not in r.stderr and "\r" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    m = SUMMARY.fullmatch(lines[0])
    assert m, lines
    n_words = len(long_text.read_text().split())
    assert int(m.group(2).replace(",", "")) == n_words
    seconds, rate, total = float(m.group(3)), int(m.group(4).replace(",", "")), float(m.group(5))
    assert total >= seconds > 0
    assert abs(rate - n_words / seconds) <= max(0.05 * rate, 2)  # the rounding of the seconds shown


def test_quiet_keeps_output_warnings_and_errors(tmp_path):
    src = tmp_path / "talk.txt"
    src.write_text("hello there how are you\n\nso what now\n")
    loud, quiet = cli("punctuate", src), cli("punctuate", src, "--quiet")
    assert quiet.stdout == loud.stdout and quiet.stdout.split()
    assert quiet.stderr.splitlines() == ["punctuate: warning: 1 lines without words (written empty)"]
    assert "warning: 1 lines without words" in loud.stderr
    clean = tmp_path / "clean.txt"
    clean.write_text("hello there how are you\n")
    assert cli("punctuate", clean, "-q").stderr == ""
    bad = cli("punctuate", tmp_path / "missing.txt", "-q", ok=False)
    assert bad.returncode == 1 and bad.stderr.startswith("punctkit: error: ") and "missing.txt" in bad.stderr


def test_decode_and_prepare_quiet(tmp_path):
    src = tmp_path / "ref.txt"
    src.write_text("Hello there. How are you today? I am fine, thanks.\nSo, what now? We go home.\n")
    loud = cli("prepare", src, "-o", tmp_path / "d", "--inventory", "truecase4")
    assert loud.stdout.startswith(f"prepare: {tmp_path / 'd'}")
    quiet = cli("prepare", src, "-o", tmp_path / "q", "--inventory", "truecase4", "-q")
    assert quiet.stdout == "" and quiet.stderr == ""
    assert (tmp_path / "q" / "prepare.log").read_text() == (tmp_path / "d" / "prepare.log").read_text().replace(
        str(tmp_path / "d"), str(tmp_path / "q"))
    r = cli("decode", "fast", tmp_path / "d", tmp_path / "hyp.tsv", "--format", "twocol")
    assert re.search(r"^decode: 2 utterances, 16 words in [\d.]+ s \([\d,]+ words/s labelling and writing, the "
                     r"models loaded\) -> ", r.stderr, re.M), r.stderr
    assert "%|" not in r.stderr
    q = cli("decode", "fast", tmp_path / "d", tmp_path / "hyp2.tsv", "--format", "twocol", "--quiet")
    assert "decode: " not in q.stderr and "%|" not in q.stderr
    assert (tmp_path / "hyp2.tsv").read_text() == (tmp_path / "hyp.tsv").read_text()


def test_read_meter_counts_the_bytes_read(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"one two\nthree\n" * 1000)
    with ReadMeter() as meter:
        lines = iter_lines(p)
        next(lines)
        assert 0 < meter.bytes_read() <= p.stat().st_size
        list(lines)
        assert meter.bytes_read() == p.stat().st_size
    list(iter_lines(p))  # read after the meter is off: not counted
    assert meter.bytes_read() == p.stat().st_size


def test_word_progress_is_hidden_off_a_terminal(capsys):
    """Under pytest standard error is no terminal: no bar, whatever the size, yet words are counted."""
    with WordProgress("x", size=LONG_BYTES * 10, read=lambda: 5) as bar:
        bar.update(20_000)
        assert bar.bar is None and bar.words == 20_000
    with WordProgress("y") as bar:
        bar.update(10**6)
        assert bar.bar is None
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError):
        WordProgress("z", size=10)  # a size in bytes needs the bytes read
