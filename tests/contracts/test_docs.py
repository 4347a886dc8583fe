"""Docs that cannot go stale: docs/commands.md is what utils/commands_doc.py writes from the CLI's own help,
each recipe's RESULTS.md is what utils/results_doc.py builds from its results/ blocks and docs/studies/, and
every relative link and anchor of the user-facing Markdown resolves (GitHub's anchor rules)."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "utils" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


commands_doc = _script("commands_doc")
results_doc = _script("results_doc")


def test_commands_page_is_what_the_help_says():
    from punctkit.cli import app

    current = commands_doc.PAGE.read_text(encoding="utf-8")
    assert commands_doc.page(app, current) == current, \
        f"docs/commands.md is stale: run `{commands_doc.COMMAND}` (it rewrites the part below its marker line)"


def test_commands_page_does_not_depend_on_the_terminal():
    """Written the same under any $COLUMNS and without a terminal: --check agrees at 40 and 300 columns."""
    for columns in ("40", "300"):
        r = subprocess.run([sys.executable, str(ROOT / "utils" / "commands_doc.py"), "--check"], cwd=ROOT,
                           capture_output=True, text=True, env={**os.environ, "COLUMNS": columns, "TERM": "xterm"})
        assert r.returncode == 0, r.stderr


def test_commands_page_lists_every_command_with_its_options():
    text = commands_doc.PAGE.read_text(encoding="utf-8")
    reference = text.split(commands_doc.MARKER, 1)[1]
    for title in ("punctkit punctuate", "punctkit score", "punctkit bpe train", "punctkit bpe apply"):
        assert f"`{title}`" in reference, title
    punctuate = reference.split("## `punctkit punctuate`", 1)[1].split("\n## ", 1)[0]
    for panel, option in (("Input", "--input-format"), ("Output", "--format"), ("Model", "-m, --model"),
                          ("Decoding", "--step"), ("Advanced", "--backend")):
        section = punctuate.split(f"**{panel}**", 1)[1].split("**", 1)[0]
        assert f"- `{option} " in section, (panel, option)


@pytest.mark.parametrize("recipe", results_doc.recipes(), ids=lambda p: p.name)
def test_results_page_is_built_from_its_blocks(recipe):
    current = (recipe / "RESULTS.md").read_text(encoding="utf-8")
    assert results_doc.build(recipe) == current, \
        f"recipes/{recipe.name}/RESULTS.md is stale: run `{results_doc.COMMAND}` (never edit it by hand)"


def test_every_recipe_has_its_page_built():
    assert {p.name for p in results_doc.recipes()} == {"iwslt", "ted", "asr_iwslt", "tts_iwslt"}


def test_a_study_without_front_matter_is_one_line(tmp_path):
    bad = tmp_path / "x.md"
    bad.write_text("# A study\n\ntext\n", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        results_doc.read_study(bad)
    assert str(bad) in str(e.value) and "front matter" in str(e.value) and "\n" not in str(e.value)


# ------------------------------------------------------------------ links

PAGES = sorted({ROOT / "README.md", ROOT / "RESULTS.md", *ROOT.glob("docs/**/*.md"),
                *ROOT.glob("recipes/*/RESULTS.md"), *ROOT.glob("recipes/*/results/*.md")})
INLINE = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+(\S+)", re.M)


def prose(text: str) -> str:
    """The text outside fenced code blocks, indented code blocks and code spans (links there are not links)."""
    text = re.sub(r"^(```|~~~).*?^\1\s*$", "", text, flags=re.M | re.S)
    text = re.sub(r"^(?: {4}|\t).*$", "", text, flags=re.M)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text, flags=re.S)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (a repeated one numbered -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^(```|~~~).*?^\1\s*$", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        a = commands_doc.anchor(heading)
        n = seen.get(a, 0)
        seen[a] = n + 1
        found.add(a if n == 0 else f"{a}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = prose(page.read_text(encoding="utf-8"))
    return INLINE.findall(text) + DEFINITION.findall(text)


def test_the_anchor_rule():
    assert commands_doc.anchor("Load: default threads on an idle and a busy machine") == \
        "load-default-threads-on-an-idle-and-a-busy-machine"
    assert commands_doc.anchor("The accurate model, shipped as `-m accurate` (conf/x_y.yaml)") == \
        "the-accurate-model-shipped-as--m-accurate-confx_yyaml"
    assert commands_doc.anchor("Yi & Tao's [paper](http://a.b) config") == "yi--taos-paper-config"


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` whose file does not exist, or whose anchor no heading there has."""
    broken = []
    for target in links(page):
        if re.match(r"[a-z][\w+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading of that anchor in {dest.name}")
    return broken


def test_broken_links_are_found(tmp_path):
    (tmp_path / "b.md").write_text("# Load: threads\n\n## Load: threads\n", encoding="utf-8")
    page = tmp_path / "a.md"
    page.write_text("# Top\n\n[ok](b.md#load-threads) [ok](b.md#load-threads-1) [ok](#top) `[code](nowhere.md)`\n"
                    "[bad](b.md#load) [bad](c.md) [bad](#bottom)\n\n[ref]: b.md#nothing\n\n    [indented](x.md)\n",
                    encoding="utf-8")
    assert broken_links(page) == ["b.md#load: no heading of that anchor in b.md", "c.md: no such file",
                                  "#bottom: no heading of that anchor in a.md",
                                  "b.md#nothing: no heading of that anchor in b.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
