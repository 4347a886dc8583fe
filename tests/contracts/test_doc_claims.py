"""Claims of README.md and docs/ that a command can check, checked (issue 81, "honest docs"): one speed per model
and machine (the README's tables, the shipped cards and RESULTS.md quote the same run), and the formats' list of
docs/formats.md is the registry's. The README's console examples and their outputs: tests/contracts/test_readme.py; the
commands' reference: tests/contracts/test_docs.py; the Python examples of docs/api.md: tests/test_api.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from punctkit.package.card import SPEED
from punctkit.package.read import read_package
from punctkit.pretrained import SHIPPED, shipped_path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RESULTS = (ROOT / "RESULTS.md").read_text(encoding="utf-8")
FIGURE = r"(\d{1,3}(?:,\d{3})+|\d+)"


def card_speed(name: str) -> str:
    """The leading words/s figure of a shipped model's card (`punctkit models` shows it)."""
    card = read_package(shipped_path(name)).manifest["card"]
    m = SPEED.match(str(card.get("speed") or ""))
    assert m, card.get("speed")
    return m.group(1).split()[0]


def row_cells(text: str, start: str) -> list[list[str]]:
    """The cells of every markdown table row that begins with `start`."""
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in text.splitlines()
            if ln.startswith(start)]


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_one_speed_per_model_and_machine(name):
    speed = card_speed(name)
    assert re.fullmatch(FIGURE, speed), speed  # one figure, not a range
    # README's model table: `-m` | model | test2011 | calls | words/s | size
    (readme,) = [r for r in row_cells(README, f"| `{name}`") if r[-1].endswith("MB")]
    assert readme[4] == speed, (readme, speed)
    # README's recipe table and RESULTS.md's best-model table name the model as `-m NAME`
    quoted = [c for r in row_cells(README, "| ted + calls") + row_cells(RESULTS, "| ted |")
              if f"`-m {name}`" in r[1] for c in r if "words/s" in c]
    assert quoted and all(q.startswith(f"{speed} words/s") for q in quoted), (quoted, speed)
    # RESULTS.md's speed table: the shipped model's row on the card's machine has that figure, and no other row of
    # that machine names the shipped model
    machine = re.search(r"on 2 cores of an? (.+?) \(", read_package(shipped_path(name)).manifest["card"]["speed"])
    assert machine, "the card names its machine"
    rows = [r for r in row_cells(RESULTS, f"| `-m {name}`") if r[1].startswith(machine.group(1))]
    assert [r[2] for r in rows] == [speed], (rows, speed)
    assert machine.group(1) in README


def test_the_formats_listed_are_the_registrys():
    from punctkit.data.formats import READ_FORMATS, names

    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    quoted = set(re.findall(r"`([a-z][a-z0-9_-]*)`", text))
    missing = [n for n in (*READ_FORMATS, *names("writer")) if n not in quoted]
    assert not missing, f"docs/formats.md does not name the formats {missing}"
