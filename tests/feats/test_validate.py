"""validate-data-dir: Kaldi's validate_data_dir.sh checks, one problem a line."""
from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from punctkit.feats.validate import validate_data_dir


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(ln + "\n" for ln in lines))


@pytest.fixture
def good(tmp_path: Path) -> Path:
    with wave.open(str(tmp_path / "r1.wav"), "wb") as w:  # a 2-second recording
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.zeros(32000, dtype="<i2").tobytes())
    d = tmp_path / "d"
    d.mkdir()
    write_lines(d / "wav.scp", [f"r1 {tmp_path / 'r1.wav'}"])
    write_lines(d / "segments", ["u1 r1 0.00 1.00", "u2 r1 1.00 2.00"])
    write_lines(d / "text", ["u1 hello there", "u2 good bye"])
    write_lines(d / "labels", ["u1 O COMMA", "u2 O PERIOD"])
    write_lines(d / "utt2spk", ["u1 s1", "u2 s1"])
    write_lines(d / "spk2utt", ["s1 u1 u2"])
    write_lines(d / "ctm", ["u1 1 0.10 0.30 hello", "u1 1 0.45 0.40 there", "u2 1 0.00 0.30 good",
                            "u2 1 0.35 0.50 bye"])
    return d


def test_valid_dir_has_no_problems(good: Path) -> None:
    assert validate_data_dir(good) == []


def test_unsorted_file_named_with_line(good: Path) -> None:
    write_lines(good / "text", ["u2 good bye", "u1 hello there"])
    problems = validate_data_dir(good)
    assert problems == [f"{good / 'text'}:2: not sorted ('u1' after 'u2'); sort with LC_ALL=C"]


def test_inconsistent_ids_speakers_labels(good: Path) -> None:
    write_lines(good / "utt2spk", ["u1 s1", "u2 s2", "u3 s2"])
    write_lines(good / "labels", ["u1 O", "u2 O PERIOD"])
    problems = validate_data_dir(good)
    assert f"{good / 'utt2spk'}:3 (utterance u3): utterance is not in {good / 'text'}" in problems
    assert f"{good / 'labels'}:1 (utterance u1): 1 labels for 2 words in text" in problems
    assert any(p.startswith(f"{good / 'spk2utt'}:1: speaker 's1' does not list") for p in problems)
    assert f"{good / 'spk2utt'}: no line for speaker 's2' of {good / 'utt2spk'}" in problems


def test_segment_past_end_and_ctm_disagreement(good: Path) -> None:
    write_lines(good / "segments", ["u1 r1 0.00 1.00", "u2 r1 1.00 2.50"])
    write_lines(good / "ctm", ["u1 1 0.10 0.30 hello", "u1 1 0.45 0.40 where", "u2 1 0.00 0.30 good",
                               "u2 1 0.35 1.50 bye"])
    problems = validate_data_dir(good)
    assert problems[0] == (f"{good / 'segments'}:2 (utterance u2): segment 1.00..2.50 s is past the end of "
                           "recording 'r1' (2.00 s)")
    assert problems[1].startswith(f"{good / 'ctm'}:2 (utterance u1): CTM disagrees with")
    assert problems[2].startswith(f"{good / 'ctm'}:4 (utterance u2): word ends at 1.85 s, after the end")
    assert len(problems) == 3


def test_cli_exit_status(good: Path) -> None:
    run = [sys.executable, "-c", "from punctkit.cli import main; main()", "validate-data-dir", str(good)]
    assert subprocess.run(run, capture_output=True).returncode == 0
    write_lines(good / "utt2spk", ["u2 s1", "u1 s1"])
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stdout.splitlines() == [f"{good / 'utt2spk'}:2: not sorted ('u1' after 'u2'); sort with LC_ALL=C"]


@pytest.mark.parametrize("name, lines, says", [
    ("segments", ["u1 r1 0.00 nan", "u2 r1 1.00 2.00"], "segments:1 (utterance u1): end must be a finite number"),
    ("segments", ["u1 r1 soon 1.00", "u2 r1 1.00 2.00"], "segments:1 (utterance u1): start must be a number"),
    ("utt2dur", ["u1 inf", "u2 1.0"], "utt2dur:1 (utterance u1): the duration must be a finite number"),
    ("utt2dur", ["u1 0", "u2 1.0"], "utt2dur:1 (utterance u1): the duration must be a positive number"),
    ("ctm", ["u1 1 0.10 nan hello"], "ctm:1 (utterance u1): the duration (field 4) must be a time from 0 to"),
])
def test_times_that_are_not_finite_numbers_are_problems(good: Path, name: str, lines: list[str], says: str) -> None:
    write_lines(good / name, lines)
    problems = validate_data_dir(good)
    assert any(p.startswith(f"{good / says.split(':')[0]}:") and says.split(":", 1)[1] in p for p in problems), problems
