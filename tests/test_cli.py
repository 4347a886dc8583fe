"""The CLI as a user meets it: `punctkit ARGS`, each a process of its own (tests/commands.py)."""
import re
import sys
from pathlib import Path

import pytest
import typer

import commands

PK = [sys.executable, "-m", "punctkit.cli"]


def run(*args, ok=True):
    r = commands.run([str(a) for a in args])  # a process of its own, as `python -m punctkit.cli ARGS`
    if ok:
        assert r.returncode == 0, r.stderr
    return r


# The stage commands of docs/commands.md: dropping or renaming one fails here.
STAGES = (
    "prepare", "convert", "stats", "score", "results", "prepare-inputs", "bpe", "w2v-train", "train",
    "decode", "average-checkpoints", "split-data", "combine-data", "validate-data-dir", "extract-feats",
    "compute-cmvn", "synthesize", "align", "recognize", "s2v-train", "pack", "models", "formats", "punctuate", "serve",
)
COMMANDS_DOC = Path(__file__).resolve().parents[1] / "docs" / "commands.md"


def listed_commands(help_text: str) -> set[str]:
    """Command names in the Commands section of a `--help` page (rich box or plain layout)."""
    section = help_text.split("Commands", 1)[1]
    return set(re.findall(r"^[│|]?\s{1,3}([a-z][\w-]*)(?=\s{2,}|\s*[│|]?$)", section, re.M))


def test_help_lists_every_registered_command():
    """`punctkit --help` (and each command group's --help) names exactly the commands the app registers."""
    from punctkit.cli import app

    root = typer.main.get_command(app)
    assert listed_commands(run("--help").stdout) == set(root.commands)
    groups = {name: cmd for name, cmd in root.commands.items() if hasattr(cmd, "commands")}
    assert groups, "bpe is a command group"
    for name, group in groups.items():
        assert listed_commands(run(name, "--help").stdout) == set(group.commands), name


def test_every_command_is_documented():
    """The stage list above, docs/commands.md and the app agree: every command has its entry there."""
    from punctkit.cli import app

    root = typer.main.get_command(app)
    assert set(STAGES) <= listed_commands(run("--help").stdout)
    text = COMMANDS_DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"`punctkit\s+([a-z][\w-]*)", text))
    assert documented == set(STAGES) == set(root.commands), \
        f"docs/commands.md lacks {sorted(set(root.commands) - documented)}, " \
        f"documents no such command {sorted(documented - set(root.commands))}"


def test_prepare_stats_convert(tmp_path):
    src = tmp_path / "talk.txt"
    src.write_text("Hello there, friend. How are you?\n")
    out = run("prepare", src, "-o", tmp_path / "d").stdout
    assert "repairs: 0" in out
    assert (tmp_path / "d" / "labels").read_text() == "d-talk.txt-000001 O COMMA PERIOD O O QUESTION\n"
    table = run("stats", tmp_path / "d").stdout
    assert "QUESTION" in table and "sentences" in table
    run("convert", tmp_path / "d", tmp_path / "p2.txt", "--to", "punctuator2")
    assert (tmp_path / "p2.txt").read_text() == "Hello there ,COMMA friend .PERIOD How are you ?QUESTIONMARK\n"


def test_output_to_a_fifo_or_device_is_written_not_replaced(tmp_path):
    """`-o /dev/null` or a named pipe: outputs are written into it, never renamed onto it."""
    import os
    import stat
    import threading

    src = tmp_path / "talk.txt"
    src.write_text("Hello there, friend. How are you?\n")
    run("prepare", src, "-o", tmp_path / "d")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    run("convert", tmp_path / "d", fifo, "--to", "punctuator2")
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got == ["Hello there ,COMMA friend .PERIOD How are you ?QUESTIONMARK\n"]
    assert [q.name for q in tmp_path.iterdir() if q.name.startswith(".")] == []  # no temporary left


def test_errors_are_one_line(tmp_path):
    r = run("prepare", tmp_path / "missing.txt", "-o", tmp_path / "d", ok=False)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [f"punctkit: error: file not found: {tmp_path / 'missing.txt'}"]
    bad = tmp_path / "bad"
    bad.write_text("a\tO\nb\tNOPE\n")
    r = run("convert", bad, tmp_path / "o", "--from", "twocol", ok=False)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert f"{bad}:2: unknown label 'NOPE'" in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("opt", ["--rechunk", "--inventory"])
def test_bad_option_values(tmp_path, opt):
    src = tmp_path / "t.txt"
    src.write_text("Hi.\n")
    r = run("prepare", src, "-o", tmp_path / "d", opt, "abc", ok=False)
    # both are checked while the command line is parsed: usage errors (status 2)
    assert r.returncode == 2 and "punctkit: error:" in r.stderr and opt in r.stderr


def test_a_command_run_by_the_tests_is_the_command_run_as_a_process(tmp_path, monkeypatch):
    """tests/commands.py forks the commands of the tests from a process with torch loaded: each gives the exit
    status, standard output and standard error that `python -m punctkit.cli ARGS` gives (a listing, a usage
    error, a one-line user error, a command that writes a file in the caller's directory)."""
    import subprocess

    (tmp_path / "in.txt").write_text("so what do you think\n")
    monkeypatch.chdir(tmp_path)
    for args in (["models"], ["punctuate", "--format", "xml", "in.txt"], ["punctuate", "missing.txt"],
                 ["convert", "in.txt", "out.txt"]):
        forked = commands.run(args)
        (tmp_path / "out.txt").unlink(missing_ok=True)
        alone = subprocess.run(PK + args, capture_output=True, text=True, cwd=tmp_path)
        assert (forked.returncode, forked.stdout, forked.stderr) == (alone.returncode, alone.stdout, alone.stderr)
