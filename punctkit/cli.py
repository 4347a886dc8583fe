"""The `punctkit` command: one thin subcommand per stage over the library.

This is the only module that imports typer. Each command parses its options,
calls one library function and prints a short summary; errors the user can fix
(`PunctkitError`) are printed as one line and exit with status 1.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from punctkit.files import PunctkitError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Punctuation and casing restoration for speech transcripts (Kaldi/ESPnet-style stages).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _lines_opt(spec: Optional[str]) -> Optional[tuple[int, int]]:
    if not spec:
        return None
    a, _, b = spec.partition(":")
    try:
        return int(a or 1), int(b) if b else 10**12
    except ValueError:
        raise PunctkitError(f"--lines expects FIRST:LAST, got '{spec}'") from None


# ------------------------------------------------------------------ data preparation

@app.command()
def convert(
    src: Path = typer.Argument(..., help="input file or data directory"),
    dst: Path = typer.Argument(..., help="output file or data directory"),
    from_fmt: Optional[str] = typer.Option(None, "--from", help="twocol|punctuator2|text|kaldi_text|datadir (detected when omitted)"),
    to_fmt: Optional[str] = typer.Option(None, "--to", help="output format (default: text, or datadir for a dir/)"),
    inventory: Optional[str] = typer.Option(None, help="label inventory (default: inferred; 4class for text)"),
) -> None:
    """Convert punctuated data between formats."""
    from punctkit.data.formats import convert as do_convert

    n, w = do_convert(src, dst, from_fmt, to_fmt, inventory)
    typer.echo(f"convert: {n} utterances, {w} words -> {dst}", err=True)


@app.command()
def prepare(
    inputs: List[Path] = typer.Argument(..., help="punctuated text files (any format)"),
    out: Path = typer.Option(..., "--out", "-o", help="data directory to write"),
    fmt: Optional[str] = typer.Option(None, "--from", help="input format (detected when omitted)"),
    inventory: str = typer.Option("4class", help="4class | 6class | case4 | case6"),
    rules: Optional[Path] = typer.Option(None, help="YAML substitution rules (default: Faber 2020 table)"),
    lowercase: bool = typer.Option(False, help="lower-case every word"),
    rechunk: Optional[str] = typer.Option(None, help="rechunk lengths, e.g. '25-50,50-75' or '60'"),
    block_len: Optional[int] = typer.Option(None, help="store each input as one stream of N-word blocks"),
    seed: int = typer.Option(1, help="seed for rechunking"),
    strict: bool = typer.Option(False, help="fail on the first repair instead of reporting it"),
    name: Optional[str] = typer.Option(None, help="utterance id prefix (default: the output dir name)"),
    lines: Optional[str] = typer.Option(None, help="only lines FIRST:LAST of each input"),
) -> None:
    """Punctuated text -> data directory (text, labels, utt2spk), with a repair report."""
    from punctkit.data.prepare import prepare as do_prepare

    report = do_prepare(inputs, out, fmt, inventory, rules, lowercase, rechunk, block_len, seed,
                        strict, name, _lines_opt(lines))
    typer.echo("\n".join([f"prepare: {out}"] + report.lines()))


@app.command()
def stats(data: Path = typer.Argument(..., help="data directory or labelled file")) -> None:
    """Print the label distribution (words, sentences, % per class)."""
    from punctkit.data.prepare import stats_table

    typer.echo(stats_table(data))


# ------------------------------------------------------------------ scoring
# (score commands)

# ------------------------------------------------------------------ text inputs and training
# (engine commands)

# ------------------------------------------------------------------ data directories and cluster
# (cluster commands)

# ------------------------------------------------------------------ audio
# (acoustic commands)

# ------------------------------------------------------------------ packed models
# (punctuate commands)


def main() -> None:
    """Entry point: run the app, turning PunctkitError into a one-line message."""
    try:
        app(standalone_mode=False)
    except PunctkitError as e:
        typer.echo(f"punctkit: error: {e}", err=True)
        sys.exit(1)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("punctkit: aborted", err=True)
        sys.exit(130)
    except Exception as e:  # click usage errors come here in non-standalone mode
        import click

        if isinstance(e, click.exceptions.Exit):
            sys.exit(e.exit_code)
        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(e.exit_code)
        raise


if __name__ == "__main__":
    main()
