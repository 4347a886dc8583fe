#!/usr/bin/env python3
"""What a user passes punctuate, made from a cased, punctuated NLP reference (a call, a meeting): the same rows
with the tokens lower-cased and the `punctuation`, `prepunctuation` and `case` columns emptied, as a recognizer
without marks writes them.

    python local/blind.py REF.nlp OUT.nlp [--no-speakers] [--no-times]
    python local/blind.py --scp data/local/calls_valid.scp OUTDIR [--no-speakers] [--no-times] > OUTDIR.scp

`--no-speakers`: every row speaker 0 (the words only, one stream); `--no-times`: `ts` and `endTs` emptied.
Non-speech rows (`<inaudible>`) stay as they are. With `--scp`, each `id path` line's file is written as
`OUTDIR/<id>.nlp` and an `id path` line printed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punctkit.data.formats.nlp import Header, non_speech
from punctkit.files import PunctkitError, iter_lines, where, write_lines

EMPTIED = ("punctuation", "prepunctuation", "case")


def blind_lines(ref: Path, speakers: bool = True, times: bool = True) -> list[str]:
    """The rows of `ref` as a recognizer without marks writes them (see the module's docstring)."""
    header: Header | None = None
    out: list[str] = []
    for i, line in iter_lines(ref):
        if not line.strip():
            continue
        if header is None:
            cols = line.strip().split("|")
            if cols[:2] != ["token", "speaker"] or len(set(cols)) != len(cols):
                raise PunctkitError(f"{where(ref, i)}: not an NLP header (token|speaker|...)")
            header = Header(cols)
            out.append(line.strip())
            continue
        row = header.row(ref, i, line.rstrip("\r\n"))
        f = dict(row.fields)
        if not non_speech(f["token"]):
            f["token"] = f["token"].lower()
            for c in EMPTIED:
                if c in f:
                    f[c] = ""
        if not speakers:
            f["speaker"] = "0"
        if not times:
            f["ts"] = f["endTs"] = ""
        out.append("|".join(f[c] for c in header.columns))
    if header is None:
        raise PunctkitError(f"{ref}: empty (no NLP header)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--scp", action="store_true", help="REF is an `id path` list; OUT a directory")
    ap.add_argument("--no-speakers", action="store_true")
    ap.add_argument("--no-times", action="store_true")
    args = ap.parse_args()
    keep = dict(speakers=not args.no_speakers, times=not args.no_times)
    try:
        if not args.scp:
            write_lines(args.out, blind_lines(args.ref, **keep))
            return
        args.out.mkdir(parents=True, exist_ok=True)
        for _, line in iter_lines(args.ref):
            if not line.strip():
                continue
            uid, path = line.split(maxsplit=1)
            dst = args.out / f"{uid}.nlp"
            write_lines(dst, blind_lines(Path(path.strip()), **keep))
            print(f"{uid} {dst}")
    except PunctkitError as e:
        sys.exit(f"{Path(sys.argv[0]).name}: {e}")


if __name__ == "__main__":
    main()
