#!/usr/bin/env python3
"""Build each recipe's RESULTS.md from its committed blocks and one table of its studies.

A recipe's RESULTS.md is written, never edited: from recipes/<recipe>/results/intro.md (the data and the
machine), every other recipes/<recipe>/results/<tag>.md (one config each, in the format stage 6 writes
exp/<tag>/RESULTS.md: environment, command, config, a table per test set), and one row per study of
docs/studies/<recipe>/*.md (the study's title, and what it asks and its answer in one line, from the
study file's front matter; the rows in its `order`). The studies' text stays in docs/studies/.

    python utils/results_doc.py                  # rebuild every recipes/*/RESULTS.md
    python utils/results_doc.py --check          # exit 1 when one is not what it would write
    python utils/results_doc.py --add recipes/iwslt/exp/TAG   # after stage 6: copy exp/TAG/RESULTS.md in, rebuild
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from punctkit.files import PunctkitError
from punctkit.files.yaml_data import parse_yaml

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python utils/results_doc.py"
INTRO = "intro.md"


@dataclass
class Study:
    """One study file of docs/studies/<recipe>/: its title (first heading), place in the table and summary."""
    path: Path
    title: str
    order: int
    asks: str
    answer: str


def read_study(path: Path) -> Study:
    """A study file: YAML front matter (recipe, order, asks, answer) between `---` lines, then its text."""
    text = path.read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise SystemExit(f"results_doc: {path}:1: no front matter (---, order:, asks:, answer:, ---): add it")
    try:
        meta = parse_yaml(m.group(1), f"{path} (front matter)") or {}
    except PunctkitError as e:
        raise SystemExit(f"results_doc: {e}") from None
    missing = [k for k in ("order", "asks", "answer") if not meta.get(k) and meta.get(k) != 0]
    if missing:
        raise SystemExit(f"results_doc: {path}:1: front matter lacks {', '.join(missing)}: add it")
    heading = re.search(r"^# (.+)$", text[m.end():], re.M)
    if not heading:
        raise SystemExit(f"results_doc: {path}: no `# ` title after the front matter: add one")
    return Study(path, heading.group(1).strip(), int(meta["order"]), str(meta["asks"]), str(meta["answer"]))


def demote(text: str, levels: int) -> str:
    """Every Markdown heading of `text` `levels` deeper (outside fenced code blocks)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out)


def relink(text: str, src: Path, dst: Path) -> str:
    """`text`'s relative Markdown links, written for a file in directory `src`, for one in `dst` instead."""
    def fix(m: re.Match) -> str:
        target = m.group(1)
        if re.match(r"[a-z]+:|#", target):
            return m.group(0)
        path, hash_, anchor = target.partition("#")
        moved = os.path.relpath(os.path.normpath(src / path), dst).replace(os.sep, "/")
        return f"]({moved}{hash_}{anchor})"
    return re.sub(r"\]\(([^)\s]+)\)", fix, text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def build(recipe_dir: Path) -> str:
    """The RESULTS.md of one recipe, from its results/ blocks and docs/studies/<recipe>/."""
    name = recipe_dir.name
    results = recipe_dir / "results"
    intro = relink((results / INTRO).read_text(encoding="utf-8").strip("\n"), results, recipe_dir)
    blocks = sorted(p for p in results.glob("*.md") if p.name != INTRO)
    studies = sorted((read_study(p) for p in (ROOT / "docs" / "studies" / name).glob("*.md")),
                     key=lambda s: (s.order, s.path.name))
    out = [f"# recipes/{name}: results", "",
           f"<!-- Written by `{COMMAND}` from results/*.md and docs/studies/{name}/: edit those, then rerun it. -->",
           "", intro, "",
           "## Configs", "",
           "One block per config, as stage 6 writes `exp/<tag>/RESULTS.md` (environment, command, config, a table",
           f"per test set), each kept in `results/<tag>.md`{'' if blocks else ' (none yet)'}. After a run, from the "
           "repository's root,", f"`{COMMAND} --add recipes/{name}/exp/<tag>` copies the new block in and rebuilds "
           "this page.", ""]
    for block in blocks:
        out += [demote(relink(block.read_text(encoding="utf-8").strip("\n"), results, recipe_dir), 2), ""]
    if studies:
        out += ["## Studies", "", "Each study's text, tables and commands are in its file.", "",
                "| study | what it asks | the answer |", "|---|---|---|"]
        for s in studies:
            link = os.path.relpath(s.path, recipe_dir).replace(os.sep, "/")
            out.append(f"| [{_cell(s.title)}]({link}) | {_cell(s.asks)} | {_cell(s.answer)} |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def recipes() -> list[Path]:
    """The recipes whose RESULTS.md is built (those with a results/ directory)."""
    return sorted(p.parent.parent for p in (ROOT / "recipes").glob(f"*/results/{INTRO}"))


def add(exp: Path) -> Path:
    """Copy `exp/RESULTS.md` (stage 6's) to recipes/<recipe>/results/<tag>.md; the recipe is the one above exp/."""
    exp = exp.resolve()
    source = exp / "RESULTS.md"
    if not source.is_file():
        raise SystemExit(f"results_doc: {source}: no such file: run stage 6 first (./run.sh --stage 6)")
    recipe = exp.parent.parent
    if exp.parent.name != "exp" or not (recipe / "results" / INTRO).is_file():
        raise SystemExit(f"results_doc: {exp}: not recipes/<recipe>/exp/<tag> of a recipe with results/{INTRO}")
    target = recipe / "results" / f"{exp.name}.md"
    shutil.copyfile(source, target)
    return recipe


def write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only say whether every RESULTS.md is up to date")
    ap.add_argument("--add", type=Path, metavar="EXP", help="copy EXP/RESULTS.md into its recipe's results/ first")
    a = ap.parse_args()
    if a.add:
        add(a.add)
    stale = []
    for recipe in recipes():
        path = recipe / "RESULTS.md"
        new = build(recipe)
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        if new != old:
            stale.append(path.relative_to(ROOT))
            if not a.check:
                write(path, new)
    if a.check and stale:
        print(f"results_doc: stale: {', '.join(map(str, stale))}: run `{COMMAND}`", file=sys.stderr)
        sys.exit(1)
    if not a.check:
        print(f"results_doc: {len(stale)} written" + (f": {', '.join(map(str, stale))}" if stale else ""))


if __name__ == "__main__":
    main()
