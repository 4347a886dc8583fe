"""The README's commands work as written: its code blocks are read and the quick ones run.

- ```console blocks: each `$ ` line runs (in order, in one temporary directory holding the README's
  Whisper JSON as talk.json) with the installed punctkit, and its standard output must be the lines
  the README shows under it (a trailing blank line aside).
- ```python blocks run.
- ```bash blocks: the two set-up commands (install + main job, and the test command, which .ci/run
  runs byte for byte) are checked, not run: their scripts exist and parse, and the configs they
  name exist; every other command's `punctkit X` is a command, and its `cd`/config paths exist.
- The page itself: at most 250 lines, none over 120 characters, no work-tracking numbers, and every
  link to docs/ or RESULTS.md names a file that exists.
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INSTALL = "utils/install.sh && (cd recipes/iwslt && ./run.sh)"
TESTS = ". ./path.sh && python -m pytest -q -n auto --dist loadfile tests"


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


TEXT = README.read_text(encoding="utf-8")
BLOCKS = blocks(TEXT)


def of(lang: str) -> list[str]:
    return [body for k, body in BLOCKS if k == lang]


def console_steps(body: str) -> list[tuple[str, str]]:
    """(command, expected stdout) of each `$ ` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return [(cmd, "".join(f"{x}\n" for x in out)) for cmd, out in steps]


def test_blocks_are_read():
    assert len(of("console")) >= 4 and of("json") and of("python") and len(of("bash")) >= 3
    assert blocks("a\n```bash\nx\n```\n```console\n$ y\nz\n```\n") == [("bash", "x\n"), ("console", "$ y\nz\n")]
    assert console_steps("$ a\nb\nc\n$ d\n") == [("a", "b\nc\n"), ("d", "")]


def test_the_page_is_short_and_plain():
    lines = TEXT.splitlines()
    assert len(lines) <= 250
    assert not [n for n, line in enumerate(lines, 1) if len(line) > 120], "README lines over 120 characters"
    assert not re.search(r"\b(issues?|sessions?) #?\d", TEXT, re.I), "work-tracking numbers in user text"
    for target in re.findall(r"\]\(([^)#]+)\)|\b(docs/[\w.-]+\.md)\b", TEXT):
        path = next(t for t in target if t)
        assert (ROOT / path).exists(), f"README links to {path}, which does not exist"


def test_the_two_set_up_commands():
    """Exactly two commands for a fresh machine, their scripts present and parsing, and CI running the
    README's test command byte for byte."""
    setup = [body.strip() for body in of("bash") if body.strip() in (INSTALL, TESTS)]
    assert setup == [INSTALL, TESTS]
    assert TESTS in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for script in ("utils/install.sh", "recipes/iwslt/run.sh", "recipes/iwslt/punct.sh", "path.sh"):
        path = ROOT / script
        assert path.is_file(), script
        r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert r.returncode == 0, f"{script}: {r.stderr}"
    run_sh = (ROOT / "recipes" / "iwslt" / "run.sh").read_text(encoding="utf-8")
    config = re.search(r"^train_config=(\S+)", run_sh, re.M).group(1)
    assert (ROOT / "recipes" / "iwslt" / config).is_file(), config


def test_other_bash_commands_name_what_exists():
    from punctkit.cli import app

    commands = set(typer.main.get_command(app).commands)
    for body in of("bash"):
        if body.strip() in (INSTALL, TESTS):
            continue
        cwd = ROOT
        for line in body.splitlines():
            for part in re.split(r"\s*&&\s*", line.split("#", 1)[0].strip()):
                words = shlex.split(part)
                if not words:
                    continue
                if words[0] == "cd":
                    cwd = cwd / words[1]
                    assert cwd.is_dir(), part
                elif words[0] == "punctkit":
                    assert words[1] in commands, part
                elif words[0].startswith("./"):
                    assert (cwd / words[0]).is_file(), part
                for word in words:
                    if word.endswith(".yaml"):
                        assert (cwd / word).is_file(), f"{part}: no {cwd / word}"


def test_named_configs_exist():
    for name in set(re.findall(r"`(?:conf/)?(train_\w+\.yaml)`", TEXT)):
        assert list(ROOT.glob(f"recipes/*/conf/{name}")), name


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (whisper,) = of("json")
    json.loads(whisper)  # the README shows valid JSON
    (tmp_path / "talk.json").write_text(whisper, encoding="utf-8")
    return tmp_path


def test_console_blocks_print_what_the_readme_shows(workdir):
    """Every `$ ` command, run in order (with the shipped model), prints exactly the README's lines."""
    shell = f"punctkit() {{ {shlex.quote(sys.executable)} -m punctkit.cli \"$@\"; }}\n"
    ran = 0
    for body in of("console"):
        for cmd, want in console_steps(body):
            r = subprocess.run(["bash", "-c", shell + cmd], cwd=workdir, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"{cmd}: {r.stderr}"
            # the page cannot show a trailing blank line (an SRT ends with one); all else is exact
            assert r.stdout.rstrip("\n") == want.rstrip("\n"), f"{cmd}\nREADME shows:\n{want}\nit printed:\n{r.stdout}"
            ran += 1
    assert ran >= 5


def test_python_blocks_run(workdir):
    for body in of("python"):
        r = subprocess.run([sys.executable, "-c", body], cwd=workdir, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().endswith("?"), r.stdout
