#!/usr/bin/env python3
"""Write docs/commands.md from the `punctkit` command tree's own help.

The page is the hand-written notes above its MARKER line, kept as they are (what `--help` does not
say), then the reference this script generates by walking the Typer/click tree of punctkit/cli.py:
the global options, and for each command in the order `punctkit --help` lists them its usage line,
its help text and examples, and its options grouped by their help panels. Nothing depends on the
terminal (no width, no colours, no $COLUMNS): the help records are click's, unwrapped.

    python utils/commands_doc.py            # rewrite docs/commands.md after changing a command's help
    python utils/commands_doc.py --check    # exit 1 when docs/commands.md is not what it would write
"""
from __future__ import annotations

import argparse
import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "commands.md"
COMMAND = "python utils/commands_doc.py"
MARKER = (f"<!-- Everything below this line is written by `{COMMAND}` from `punctkit --help`: "
          "edit the help in punctkit/cli.py and rerun it. -->")


@dataclass
class Panel:
    """One help panel of a command: its title and its (option or argument, help) rows."""
    title: str
    rows: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Help:
    """What `--help` says of one command: its full name, usage, text paragraphs, examples and panels."""
    path: str
    usage: str
    paragraphs: list[str]
    examples: list[str]
    panels: list[Panel]
    subcommands: list[Help] = field(default_factory=list)


def _text(raw: str | None) -> tuple[list[str], list[str]]:
    """A docstring as help shows it -> (its paragraphs, each on one line; the lines of its Examples block)."""
    paragraphs: list[str] = []
    examples: list[str] = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(raw or "")):
        lines = block.strip("\n").splitlines()
        if lines and lines[0].strip() == "\b":  # click's "do not rewrap" mark
            lines = lines[1:]
        if lines and lines[0].strip() == "Examples:":
            examples += [ln.strip() for ln in lines[1:] if ln.strip()]
        elif lines:
            paragraphs.append(" ".join(ln.strip() for ln in lines))
    return paragraphs, examples


def _context(cmd: Any, name: str, parent: Any = None) -> Any:
    """A click context for `cmd` (Typer's own click, whichever it is) without parsing any arguments."""
    return cmd.context_class(cmd, info_name=name, parent=parent)


def _panels(cmd: Any, ctx: Any) -> list[Panel]:
    """The command's parameters (but --help) by help panel, in the order they first appear; arguments
    and options without a panel fall in "Arguments" and "Options", as `--help` shows them."""
    panels: dict[str, Panel] = {}
    for param in cmd.get_params(ctx):
        if param.name == "help":
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        default = "Arguments" if param.param_type_name == "argument" else "Options"
        title = getattr(param, "rich_help_panel", None) or default
        panels.setdefault(title, Panel(title)).rows.append(record)
    return sorted(panels.values(), key=lambda p: p.title != "Arguments")


def collect(cmd: Any, ctx: Any) -> Help:
    """The help of `cmd` and, for a group, of each of its subcommands in their listed order."""
    paragraphs, examples = _text(cmd.help)
    usage = f"Usage: {ctx.command_path} {' '.join(cmd.collect_usage_pieces(ctx))}"  # one line, whatever $COLUMNS
    found = Help(ctx.command_path, usage, paragraphs, examples, _panels(cmd, ctx))
    if hasattr(cmd, "list_commands"):  # a group
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            found.subcommands.append(collect(sub, _context(sub, name, ctx)))
    return found


def _md(text: str) -> str:
    """Help text as Markdown shows it literally: no HTML tags, no emphasis, no stray code spans."""
    return re.sub(r"([<*`\\])", lambda m: "&lt;" if m.group(1) == "<" else "\\" + m.group(1), text)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text: links as their text, lower case, punctuation but - and _ dropped,
    each space a - (a page's second heading of the same anchor gets -1, the third -2: tests/contracts/test_docs.py)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _section(h: Help, level: int) -> list[str]:
    """The Markdown of one command (and its subcommands, a level down)."""
    out = [f"{'#' * level} `{h.path}`", "", *(p for para in h.paragraphs for p in (_md(para), "")),
           "```text", h.usage, "```", ""]
    if h.examples:
        out += ["Examples:", "", "```bash", *h.examples, "```", ""]
    for panel in h.panels:
        out += [f"**{panel.title}**", ""]
        out += [f"- `{name}`" + (f": {_md(text)}" if text else "") for name, text in panel.rows]
        out.append("")
    for sub in h.subcommands:
        out += _section(sub, level + 1)
    return out


def reference(app: typer.Typer) -> str:
    """The generated part of the page: global options, an index of the commands, then each command."""
    root = typer.main.get_command(app)
    h = collect(root, _context(root, "punctkit"))
    out = ["## Global options", "", "```text", h.usage, "```", ""]
    for panel in h.panels:
        out += [f"- `{name}`: {_md(text)}" for name, text in panel.rows]
    out += ["", "## Index", ""]
    for sub in h.subcommands:
        summary = sub.paragraphs[0] if sub.paragraphs else ""
        out.append(f"- [`{sub.path}`](#{anchor(sub.path)}): {_md(summary)}")
    out.append("")
    for sub in h.subcommands:
        out += _section(sub, 2)
    return "\n".join(out).rstrip("\n") + "\n"


def page(app: typer.Typer, current: str) -> str:
    """The whole page: `current`'s hand-written notes up to and with MARKER, then the reference."""
    if MARKER not in current:
        raise SystemExit(f"commands_doc: {PAGE} has no marker line; put it under the hand-written notes:\n{MARKER}")
    head = current.split(MARKER, 1)[0].rstrip("\n")
    return f"{head}\n\n{MARKER}\n\n{reference(app)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only say whether the page is up to date (exit 1 if not)")
    a = ap.parse_args()
    from punctkit.cli import app

    current = PAGE.read_text(encoding="utf-8")
    new = page(app, current)
    if a.check:
        if new != current:
            print(f"commands_doc: {PAGE.relative_to(ROOT)} is stale: run `{COMMAND}`", file=sys.stderr)
            sys.exit(1)
        return
    if new != current:
        tmp = PAGE.with_name(PAGE.name + ".tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(PAGE)
    print(f"commands_doc: {PAGE.relative_to(ROOT)} {'written' if new != current else 'unchanged'}")


if __name__ == "__main__":
    main()
