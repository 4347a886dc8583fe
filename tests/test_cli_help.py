"""Help people read: `punctuate --help` groups its options in panels (Input, Output, Model, Decoding,
Advanced) and fits in far fewer lines than it did (95 at 120 columns); each main command's help shows
examples, whose options parse, and those that need only files a test can make run as written."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from conftest import IWSLT, ROOT
from punct_util import cli
from punctkit.cli import app

MAIN = ("punctuate", "score", "decode", "prepare", "convert", "serve", "pack")
CALL = ROOT.parent / "shared" / "data" / "earnings22" / "calls" / "4329526.aligned.nlp"


def help_text(*command: str, columns: int = 120) -> str:
    """`punctkit COMMAND --help` as a terminal of `columns` shows it."""
    env = {**os.environ, "COLUMNS": str(columns)}
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", *command, "--help"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def examples(command: str) -> list[list[str]]:
    """The `punctkit ...` command lines of a command's Examples block, as argument lists."""
    text = help_text(command)
    assert "Examples:" in text, text
    lines = []
    for ln in text.split("Examples:", 1)[1].splitlines()[1:]:
        if not ln.strip():  # the block ends at a blank line
            break
        lines.append(ln.strip())
    return [shlex.split(ln)[1:] for ln in lines if ln.startswith("punctkit ")]


def panel_options(text: str) -> dict[str, list[str]]:
    """Each help panel's title -> the long options listed in it."""
    panels: dict[str, list[str]] = {}
    title = None
    for line in text.splitlines():
        m = re.match(r"\s*╭─ (\w+) ─", line)
        if m:
            title = m.group(1)
            panels[title] = []
        elif title and line.lstrip().startswith("│"):
            panels[title] += re.findall(r"^\s*│\s+(--[\w-]+)", line)
    return panels


def test_punctuate_help_groups_its_options_in_panels():
    panels = panel_options(help_text("punctuate"))
    assert {"Input", "Output", "Model", "Decoding", "Advanced"} <= set(panels), panels
    for title, option in (("Input", "--input-format"), ("Input", "--encoding"), ("Output", "--format"),
                          ("Output", "--out"), ("Output", "--quiet"), ("Model", "--model"), ("Model", "--threads"),
                          ("Decoding", "--beam"), ("Decoding", "--step"), ("Advanced", "--chunk-words"),
                          ("Advanced", "--backend")):
        assert option in panels[title], (title, option, panels)
    listed = [o for opts in panels.values() for o in opts]
    assert len(listed) == len(set(listed)), listed  # each option in one panel


def test_punctuate_help_is_short():
    """95 lines at 120 columns and 198 at 80 before the panels; no line wider than the terminal."""
    for columns, most in ((120, 64), (80, 110)):
        lines = help_text("punctuate", columns=columns).rstrip("\n").splitlines()
        assert len(lines) <= most, (columns, len(lines))
        assert max(len(ln) for ln in lines) <= columns


@pytest.mark.parametrize("command", MAIN)
def test_each_main_command_shows_examples_whose_options_parse(command):
    """Two or three examples, shown as written (not re-wrapped), each parsed by the command's own parser:
    an unknown option, a bad value or a missing argument fails here."""
    shown = examples(command)
    assert 2 <= len(shown) <= 3, shown
    click_app = typer.main.get_command(app)
    for args in shown:
        assert args[0] == command, args
        sub = click_app.commands[command]  # type: ignore[attr-defined]
        with sub.make_context(command, list(args[1:])) as ctx:
            assert ctx.params is not None


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A directory holding every file the runnable examples name: text, Kaldi text, a CTM, an NLP call,
    a data directory and two-column hypotheses."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    from punctkit.data.formats import convert
    from punctkit.data.prepare import prepare

    monkeypatch.chdir(tmp_path)
    words = [ln.split("\t")[0] for ln in (IWSLT / "test2011").read_text(encoding="utf-8").splitlines()[:600]]
    lines = [" ".join(words[i:i + 60]) for i in range(0, len(words), 60)]
    Path("talk.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    Path("ref.txt").write_text("Hello there. How are you today? I am fine, thanks.\nSo, what now? We go home.\n")
    Path("hyp.txt").write_text("Hello there, how are you today? I am fine thanks.\nSo what now. We go home.\n")
    Path("hyp2.txt").write_text("Hello there. How are you today. I am fine, thanks.\nSo what now? We go home.\n")
    Path("asr_hyp.txt").write_text("Hello there. How are you? I'm fine, thanks.\nSo what now? We go home.\n")
    Path("train.txt").write_text(Path("talk.txt").read_text())
    Path("talks.lst").write_text("t1 train.txt\nt2 ref.txt\n")
    Path("talk.ctm").write_text("".join(f"talk 1 {0.4 * i:.2f} 0.30 {w} 1.0\n" for i, w in enumerate(words[:80])))
    if CALL.is_file():
        Path("call.nlp").write_text("\n".join(CALL.read_text(encoding="utf-8").splitlines()[:300]) + "\n")
    prepare([Path("ref.txt")], Path("data/test"), inventory="truecase4", show_progress=False)  # fast's
    for name in ("hyp", "hyp2"):
        convert(Path(f"{name}.txt"), Path(f"{name}.tsv"), None, "twocol", None)
    return tmp_path


RUNNABLE = ("punctuate", "score", "prepare", "convert", "decode")


@pytest.mark.parametrize("command", RUNNABLE)
def test_examples_run_as_written(workdir, command):
    """Each example whose inputs a test can make (not a trained exp/ or a large model) runs, in order."""
    ran = 0
    for args in examples(command):
        if any(a.startswith("exp/") or a == "accurate" for a in args) or ("call.nlp" in args and not CALL.is_file()):
            continue
        r = cli(*args)
        assert "Traceback" not in r.stderr, (args, r.stderr)
        ran += 1
    assert ran >= 1, command
    shutil.rmtree(workdir / "data", ignore_errors=True)


def test_punctuate_help_points_to_every_format_it_reads():
    """Its first lines named seven input formats of more than twenty; now they point to `punctkit formats`, which
    lists every format punctuate reads (tests/data/formats/test_listing.py checks that list against the registry)."""
    intro = " ".join(help_text("punctuate", columns=200).split("Examples:")[0].split())
    assert "punctkit formats" in intro, intro
    for family in ("Kaldi text", "CTM", "stm", "trn", "subtitles", "NLP", "Whisper", "NeMo", "Vosk"):
        assert family in intro, (family, intro)
