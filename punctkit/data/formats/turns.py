"""A transcript's speaker turns and times as a corpus, from any format that has them: an NLP call's
(nlp.read_nlp_turns), and the units punctuate's reader of every other format yields (`unit_turns`: an stm's
segments, a Whisper JSON's, an ASR service's turns, a CTM's utterances, subtitle cues, ...), which `prepare` and
`convert --to datadir` write an utterance a turn (datadir_io.turn_dir; docs/formats.md, "Data directories of
speaker turns").
"""
from __future__ import annotations

from sys import intern
from typing import Iterable

from punctkit.data.formats.base import AsrUtterance, Source, StreamLines, as_source, given_words, lines_only
from punctkit.data.formats.nlp import SpokenTurn, read_nlp_turns, token_word
from punctkit.data.formats.protocol import CorpusRead, ReadContext
from punctkit.data.formats.registry import REGISTRY, names
from punctkit.data.labels import default_substitution
from punctkit.data.tokenize import model_lowercase

# the formats read for their turns only (prepare, convert --to datadir): punctuate's inputs without a corpus reader
TURN_FORMATS = tuple(n for n in names("units") if REGISTRY[n].reader is None)


def transcript_turns(src: Source, name: str, how: CorpusRead, split_contractions: bool = False,
                     told: bool = False) -> list[SpokenTurn] | None:
    """The turns of input `src` of format `name`, read with `how` (its inventory and rules; `how.lines` is not
    supported: a transcript is one stream): an NLP call's (nlp.read_nlp_turns, `split_contractions` as there), or a
    format of TURN_FORMATS read by punctuate's reader (`unit_turns`; `told`: the user gave the format); None for
    any other format (its corpus reader reads it)."""
    if name == "nlp":
        return read_nlp_turns(src, how, split_contractions)
    if name not in TURN_FORMATS:
        return None
    entry = REGISTRY[name]
    inv = how.inventory
    assert inv is not None, "a transcript's turns are read into an inventory"
    ctx = ReadContext.of(src, inv, how.rules or default_substitution(inv), how.encoding, told)
    turns = unit_turns(entry.streams(src, ctx), how, entry.ids)
    if not turns:
        how.report.repair("input without any word skipped", str(as_source(src)))
    return turns


def unit_turns(streams: Iterable[StreamLines], how: CorpusRead, own_ids: bool = False) -> list[SpokenTurn]:
    """The units of a format's reader, each stream's together (protocol.InputFormat.streams, read with
    `how.inventory` and `how.rules`), as turns, a turn a unit with words: its speaker (`AsrUtterance.speaker`),
    its words (the model's words in the input's case, as an NLP call's: `cased_word`; lower-cased where
    `how.lowercase` or the inventory's data is, tokenize.model_lowercase), each labelled with the input's own mark
    after it (`marks`) and, in a case-aware inventory, its case (LabelSet.label_for). Each word keeps its own
    times; the words of a unit that share its time (a text's words: protocol.ReadContext.add_words gives them
    `index` None; an stm segment's, a cue's, a Whisper segment's text) have none, their turn the unit's span
    instead (`turn_span`). The recording of a unit's times is its stream's key (an stm's file and channel), else
    its id where `own_ids` (a CTM's or JSON lines' utterances: Kaldi's ctm counts each one's times from its own
    start); where the units name several recordings each turn keeps its own (`recording_ids`), else all are the
    document's (None). Tokens that are not words (`<unk>`, `[noise]`) are counted in `how.report`, never words."""
    inv = how.inventory
    assert inv is not None, "a transcript's turns are read into an inventory"
    lower = how.lowercase or model_lowercase(inv)
    turns: list[SpokenTurn] = []
    keys: list[str | None] = []
    for key, u in ((run.key, u) for run in streams for u in run.lines):
        for tag in u.tags:
            how.report.note(f"non-speech tokens skipped ({tag.token})")
        if lines_only(u) or not u.words:
            continue
        cased = [cased_word(w, g) for w, g in zip(u.words, given_words(u))]
        labels = [intern(inv.label_for(w, mk)) for w, mk in zip(cased, u.marks)]
        recs = [r if isinstance(r, dict) else {} for r in u.records]
        own = [not ("index" in r and r["index"] is None) for r in recs]
        times = [(r.get("start_s"), r.get("end_s")) if mine else (None, None) for r, mine in zip(recs, own)]
        span = None if all(own) else turn_span(u, [r for r, mine in zip(recs, own) if not mine])
        turns.append(SpokenTurn(u.speaker, [w.lower() for w in cased] if lower else cased, labels, times, span=span))
        keys.append(key if key is not None else u.uttid if own_ids else None)
    ids = recording_ids([k for k in dict.fromkeys(keys) if k is not None])
    if len(ids) > 1:
        for t, key in zip(turns, keys):
            t.recording = ids.get(key)  # type: ignore[arg-type]
    return turns


def cased_word(word: str, given: str) -> str:
    """The model's `word` (lower-cased: tokenize.model_word) in the case of the token the input `given` it in
    (nlp.token_word: `Hello,` -> `Hello`, `$5` -> `5`); `word` where the token holds another."""
    shown = token_word(given)
    return shown if shown.lower() == word else word


def turn_span(u: AsrUtterance, shared: list[dict]) -> tuple[float, float] | None:
    """The (start, end) seconds of a unit whose words share its time: its own, where the reader keeps it in the
    unit's `source` as `start` and `end` numbers (an stm segment's, a cue's, a Whisper segment's: exact, whatever
    marks or non-words stand at its edges), else from its words' shares (the first's start to the last's end);
    None where they have no times."""
    src = u.source if isinstance(u.source, dict) else {}
    start, end = src.get("start"), src.get("end")
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (start, end)):
        return float(start), float(end)  # type: ignore[arg-type]
    starts = [r["start_s"] for r in shared if r.get("start_s") is not None]
    ends = [r["end_s"] for r in shared if r.get("end_s") is not None]
    return (min(starts), max(ends)) if starts and ends else None


def recording_ids(keys: list[str]) -> dict[str, str]:
    """Each recording's id in a data directory, from its key (a unit's stream key or id): the key's first field
    (an stm's file) where that tells the input's recordings apart, else its fields joined by `-`
    (`<file>-<channel>`, as Kaldi's recordings of one file's channels)."""
    firsts = {k: (k.split() or ["-"])[0] for k in keys}
    if len(set(firsts.values())) == len(keys):
        return firsts
    return {k: "-".join(k.split()) or "-" for k in keys}
