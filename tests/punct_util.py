"""Helpers shared by the tests: the `punctkit` command, the checks of a user error (one line: one_line_message,
raised_error, stderr_error, cli_error), a reader's units (units_of), a tiny model trained on IWSLT slices, a recipe
in a scratch directory (recipe_copy)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import IWSLT
from punctkit.data.formats.base import AsrUtterance, Source
from punctkit.data.formats.protocol import InputFormat, ReadContext
from punctkit.data.labels import LabelSet, Substitution, default_substitution
from punctkit.data.prepare import prepare

PK = [sys.executable, "-m", "punctkit.cli"]


def recipe_copy(recipe: Path, dst: Path) -> Path:
    """Recipe directory `recipe` in the scratch directory `dst` (its data/ and exp/ land there): links to its scripts,
    configs, local scripts and utils; its path.sh, db.sh and cmd.sh sourced from the original. `dst`."""
    dst.mkdir()
    for name in ("run.sh", "conf", "local", "utils", "punct.sh"):
        if (recipe / name).exists():
            (dst / name).symlink_to((recipe / name).resolve())
    for name in ("path.sh", "db.sh", "cmd.sh"):
        (dst / name).write_text(f". {recipe / name}\n")
    return dst


def cli(*args: Any, ok: bool = True) -> subprocess.CompletedProcess:
    """Run `punctkit ARGS...` in a process of its own; with ok, assert it succeeded. The process is forked
    from one that has torch and punctkit's CLI loaded already (commands.run), which saves each command the
    2 s of loading torch; it is started as `python -m punctkit.cli` where that cannot be."""
    from commands import run

    r = run([str(a) for a in args])
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def units_of(reader: InputFormat, src: Source, inventory: LabelSet, rules: Substitution | None = None, *,
             encoding: str | None = None, told: bool = False) -> list[AsrUtterance]:
    """The units `reader` (a registry entry or a reader function: protocol.InputFormat) reads of `src`, all of them,
    through the one protocol: `reader.read(src, ReadContext.of(src, inventory, rules, encoding, told))`, `rules` the
    inventory's default substitution where None. What the reading counts (`ctx.dropped`): make the context."""
    rules = default_substitution(inventory) if rules is None else rules
    return list(reader.read(src, ReadContext.of(src, inventory, rules, encoding, told)))


def one_line_message(message: str, *says: str, start: str = "") -> str:
    """`message` checked to be a user error's: one line, no traceback, not an internal error, starting with `start`
    and saying each of `says`; the message."""
    assert "\n" not in message and "Traceback" not in message, message
    assert "internal error" not in message, message
    assert message.startswith(start), (start, message)
    for s in says:
        assert s in message, (s, message)
    return message


def raised_error(call: Callable[[], Any], start: str = "") -> str:
    """The message of the PunctkitError `call()` raises, checked by one_line_message (starting with `start`)."""
    from punctkit.files import PunctkitError

    with pytest.raises(PunctkitError) as e:
        call()
    return one_line_message(str(e.value), start=start)


def stderr_error(stderr: str, *says: str, at: str | None = None) -> str:
    """The one line of a failed command's stderr, checked: `punctkit: error: ...` alone, one_line_message's checks,
    and where `at` (a file's name) is given, `AT:LINE` in it; the line."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("punctkit: error: "), stderr
    assert "Traceback" not in stderr, stderr
    one_line_message(lines[0], *says)
    if at is not None:
        assert re.search(rf"{re.escape(at)}:\d+", lines[0]), (at, lines[0])
    return lines[0]


def cli_error(r: subprocess.CompletedProcess, *says: str, at: str | None = None, status: int = 1) -> str:
    """The error line of a failed `punctkit` run (`cli(..., ok=False)`): exit status `status`, and its stderr checked
    by stderr_error (`says`, `at`)."""
    assert r.returncode == status, (r.returncode, r.stderr)
    return stderr_error(r.stderr, *says, at=at)


def json_without(code: str, blocked: tuple[str, ...] = ("torch", "transformers")) -> Any:
    """Run Python `code` (which prints one JSON value) in a fresh process that cannot import `blocked`;
    the value it printed."""
    import json

    guard = "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    r = subprocess.run([sys.executable, "-c", f"import sys, json\n{guard}{code}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def tiny_conf(model: dict[str, Any], epochs: int) -> dict[str, Any]:
    """A training config for `model` that trains in seconds on `train_tiny`'s 8000 words."""
    return {"frontend": {"kind": "word", "min_count": 2}, "model": model,
            "train": {"lr": 0.01, "batch_size": 16, "window": 40, "epochs": epochs, "seed": 3, "n_average": 1,
                      "class_weights": "auto", "threads": 1},
            "decode": {"window": 40, "step": 20, "batch_size": 32, "beam": 1}}


def train_tiny(d: Path, conf: dict[str, Any], train_lines: int = 8000) -> Path:
    """Train `conf` on the first `train_lines` words of dev2012 (the next 1000 for dev) into d/exp;
    also writes d/test (3000 words of test2011). Skips when the IWSLT copy is missing."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    from punctkit.fit import train

    prepare([IWSLT / "dev2012"], d / "train", block_len=100, lines=(1, train_lines))
    prepare([IWSLT / "dev2012"], d / "valid", block_len=100, lines=(train_lines + 1, train_lines + 1000))
    prepare([IWSLT / "test2011"], d / "test", block_len=100, lines=(1, 3000))
    train(conf, d / "train", d / "valid", d / "exp", quiet=True)
    return d / "exp"


def network_only(d: Path, model: str = "fast") -> Path:
    """`model` packed with a boundary fusion that weighs nothing (decode/boundary.py, weight 0): its labels are its
    network's on any input (a network that reads turns and pauses itself, as `fast` does, still reads them; a test
    that compares a timed input with plain text wants a model that reads words only: conftest's `tiny_package`)."""
    import json

    from punctkit.decode.boundary import BoundaryFusion
    from punctkit.package import read_package
    from punctkit.pretrained import model_path

    out = d / f"{model}_network_only.pkt"
    if not out.is_file():
        marks = read_package(model_path(model)).boundary.marks
        (d / "zero_boundary.json").write_text(json.dumps(BoundaryFusion.identity(marks).with_weight(0.0).to_dict()))
        cli("pack", model, "--boundary", d / "zero_boundary.json", "-o", out)
    return out


def twocol_marks(path: Path) -> list[tuple[str, str]]:
    """(word lower-cased, mark) of each line of a twocol output."""
    from punctkit.data.labels import mark_of

    return [(ln.split("\t")[0].lower(), mark_of(ln.split("\t")[1]))
            for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def decode_reads_its_turns(d: Path, src: Path, tmp: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """`decode fast` of data directory `d` (prepared from `src`) and `punctuate` of `src` give every word the
    same mark (the words as each writes them), and the same words without the directory's turn files (segments,
    ctm, utt2spk...) are labelled otherwise: its turns and pauses reach the model. The decoded and the punctuated
    (word, mark) pairs."""
    cli("decode", "fast", d, tmp / "d.tsv", "--format", "twocol", "-q")
    cli("punctuate", src, "-m", "fast", "--format", "twocol", "-o", tmp / "p.tsv", "-q")
    decoded, punctuated = twocol_marks(tmp / "d.tsv"), twocol_marks(tmp / "p.tsv")
    assert len(decoded) == len(punctuated) > 1000
    assert [m for _, m in decoded] == [m for _, m in punctuated]
    plain = tmp / "plain"
    plain.mkdir()
    for f in ("text", "labels", "inventory"):
        (plain / f).write_bytes((d / f).read_bytes())
    cli("decode", "fast", plain, tmp / "plain.tsv", "--format", "twocol", "-q")
    assert [m for _, m in twocol_marks(tmp / "plain.tsv")] != [m for _, m in decoded]
    return decoded, punctuated
