#!/usr/bin/env python3
"""The meetings (AMI, ICSI, committees; ../shared/data/meetings) as the recipe uses them: one file in Rev's NLP
format a meeting, so that they go through `punctkit prepare --from nlp` and `punctkit punctuate` as the calls do.

    python local/meetings.py nlp $MEETINGS/train.jsonl data/local/meetings_train [--max-meetings N] \
        > data/local/meetings_train.scp

`nlp`: each meeting of a JSON-lines file (`{"meeting", "domain", "turns": [{"speaker", "text"}]}`) as
`OUT/<meeting>.nlp` (a header, then a token a row: `token|speaker|ts|endTs|punctuation|prepunctuation|case|tags`),
and an `id path` line a meeting on stdout (sorted, for `punctkit prepare --file-list`). What is read:
- speakers: integers in the order they first speak (Rev's habit); a turn is a run of one speaker's rows;
- AMI's and ICSI's text is tokenized with spaces around marks (`word , word .`), the committees' is not (`order.`):
  a mark, apart or at a word's end, goes to the `punctuation` column of its word (a mark that opens a turn is
  dropped); the marks are `, . ? ! ; :` (a title's dot too, as Rev writes `Mr|.`; `...` is no mark), and quotes and
  brackets around a word are dropped;
- markers in braces (`{disfmarker}`, `{vocalsound}`, `{gap}`, `{pause}`, `{comment}`, `{nonvocalsound}`) and ICSI's
  `@` (unintelligible) are not words: dropped, as a recognizer's output has nothing in their place;
- ICSI's split contractions are made whole as AMI writes them (`we 're` -> `we're`, `do n't` -> `don't`), so that
  both read the same (`prepare --split-contractions` splits them again as IWSLT does);
- ICSI's hyphenated words written with spaces (`Mm - hmm`, `front - end`) are one token (`Mm-hmm`); a `-` between
  anything else is a dash, no mark in the inventories here, dropped; quotes are dropped;
- no word times (the meetings have none): `ts` and `endTs` empty.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from punctkit.data.formats.nlp import rev_case
from punctkit.files import PunctkitError, iter_lines, write_lines

HEADER = "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags"
MARKS = {",", ".", "?", "!", ";", ":"}
CLITICS = ("'s", "'re", "'ll", "'ve", "'d", "'m", "n't", "'S", "'RE", "'LL", "'VE", "'D", "'M", "N'T")


@dataclass
class Row:
    """One token of a meeting: the word, its speaker's number and the mark after it."""

    token: str
    speaker: int
    punct: str = ""


@dataclass
class Meeting:
    """A meeting's rows, and how many of each thing that is not a word were dropped."""

    name: str
    rows: list[Row] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1


def is_word(tok: str) -> bool:
    return any(c.isalnum() for c in tok)


ATTACHED = re.compile(r"^[\"'“‘(\[]*(?P<core>.*?)[\"'”’)\]]*(?P<marks>[,.?!;:]*)[\"'”’)\]]*$")


def split_attached(tok: str) -> tuple[str, str]:
    """(word, mark) of a token with its marks attached (`order.` -> (`order`, `.`), `"Yes,"` -> (`Yes`, `,`),
    `U.S.` -> (`U.S`, `.`), `so...` -> (`so`, ``)); a token of marks alone, or without a letter or digit: as it is."""
    m = ATTACHED.match(tok)
    if not is_word(tok) or m is None or not is_word(m.group("core")):
        return tok, ""
    marks = m.group("marks")
    return m.group("core"), "" if marks.startswith("..") else marks[-1:]


def meeting_rows(name: str, turns: list[dict]) -> Meeting:
    """The rows of one meeting's turns (see the module's docstring)."""
    m = Meeting(name)
    speakers: dict[str, int] = {}
    for t in turns:
        spk = speakers.setdefault(str(t.get("speaker", "")), len(speakers))
        toks = str(t.get("text", "")).split()
        start = len(m.rows)  # marks before the turn's first word are dropped
        k = 0
        while k < len(toks):
            tok = toks[k]
            k += 1
            if tok.startswith("{") and tok.endswith("}") or tok == "@":
                m.drop(tok if tok.startswith("{") else "@")
                continue
            if tok == "-" and len(m.rows) > start and k < len(toks) and is_word(toks[k]) \
                    and is_word(m.rows[-1].token) and not m.rows[-1].punct:
                m.rows[-1].token += "-" + toks[k]  # `Mm - hmm`: one word
                k += 1
                continue
            if tok in MARKS:
                if len(m.rows) > start and not m.rows[-1].punct:
                    m.rows[-1].punct = tok
                else:
                    m.drop(f"mark {tok} without a word before it")
                continue
            if not is_word(tok):
                m.drop(f"token {tok}")
                continue
            if tok in CLITICS and len(m.rows) > start and not m.rows[-1].punct:
                m.rows[-1].token += tok  # `we 're` -> `we're`
                continue
            word, mark = split_attached(tok)
            m.rows.append(Row(word, spk, mark))
    return m


def nlp_lines(m: Meeting) -> list[str]:
    return [HEADER] + [f"{r.token}|{r.speaker}|||{r.punct}||{rev_case(r.token)}|[]" for r in m.rows]


def meeting_id(name: str) -> str:
    """A Kaldi-safe id of a meeting: ASCII letters and digits, other runs made one `_`."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") or "meeting"


def write_meetings(jsonl: Path, out: Path, max_meetings: int = 0) -> list[tuple[str, Path, Meeting]]:
    """Each meeting of `jsonl` as `out/<id>.nlp`; (id, path, meeting) sorted by id."""
    out.mkdir(parents=True, exist_ok=True)
    done: list[tuple[str, Path, Meeting]] = []
    seen: set[str] = set()
    for i, line in iter_lines(jsonl):
        if not line.strip():
            continue
        if max_meetings and len(done) >= max_meetings:
            break
        try:
            d = json.loads(line)
            name, turns = str(d["meeting"]), list(d["turns"])
        except (ValueError, KeyError, TypeError) as e:
            raise PunctkitError(f"{jsonl}:{i}: not a meeting ({{\"meeting\", \"turns\"}}): {e}") from None
        mid = meeting_id(name)
        if mid in seen:
            raise PunctkitError(f"{jsonl}:{i}: meeting {name} twice")
        seen.add(mid)
        m = meeting_rows(name, turns)
        path = out / f"{mid}.nlp"
        write_lines(path, nlp_lines(m))
        done.append((mid, path, m))
    return sorted(done, key=lambda x: x[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("nlp")
    a.add_argument("jsonl", type=Path)
    a.add_argument("out", type=Path)
    a.add_argument("--max-meetings", type=int, default=0)
    args = ap.parse_args()
    try:
        done = write_meetings(args.jsonl, args.out, args.max_meetings)
        dropped: dict[str, int] = {}
        for mid, path, m in done:
            print(f"{mid} {path}")
            for k, v in m.dropped.items():
                dropped[k] = dropped.get(k, 0) + v
        words = sum(len(m.rows) for _, _, m in done)
        turns = sum(a.speaker != b.speaker for _, _, m in done for a, b in zip(m.rows, m.rows[1:]))
        top = ", ".join(f"{k} {v}" for k, v in sorted(dropped.items(), key=lambda kv: -kv[1])[:8])
        print(f"{args.jsonl}: {len(done)} meetings, {words} words, {turns} turn changes; not words, dropped: {top}",
              file=sys.stderr)
    except PunctkitError as e:
        sys.exit(f"{Path(sys.argv[0]).name}: {e}")


if __name__ == "__main__":
    main()
