"""`punctkit decode` of a data directory reads its speaker turns and pauses as `punctuate` reads an NLP file's
(data/timing.py `read_timing`, data/streams.py `make_streams`, infer/engine.py `stream_lines`): with `segments`, a
recording's utterances in time order are one stream, a change of speaker (utt2spk) a turn change and the gap between
segments a pause; a `ctm` gives the pauses between words. Without them, a speaker's utterances are a stream as ever."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from punct_util import cli, cli_error, network_only
from punctkit.data.boundaries import N_PAUSES, N_TURNS, TURN_CHANGE
from punctkit.data.labels import mark_of
from punctkit.decode.boundary import BoundaryFusion

ROOT = Path(__file__).resolve().parents[1]
CALL = ROOT.parent / "shared" / "data" / "earnings22" / "calls" / "4470684.aligned.nlp"  # its head: all timed, turns
HEADER = "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags"
MARKS = ("O", "COMMA", "PERIOD", "QUESTION")
WORD = re.compile(r"[a-z0-9][a-z0-9']*(-[a-z0-9']+)*")  # a token that is one word as every reader reads it


@dataclass
class Turn:
    """One speaker's run of words, each with its (start, end) seconds."""

    speaker: str
    words: list[tuple[str, float, float]]


def call_turns(path: Path, lines: int) -> list[Turn]:
    """The turns of the first `lines` lines of an NLP call, lower-cased, marks dropped; the tokens that are one
    plain word (WORD) kept, each with its times (the call's head has them all)."""
    turns: list[Turn] = []
    rows = path.read_text(encoding="utf-8").splitlines()
    cols = rows[0].split("|")
    for row in rows[1:lines]:
        f = dict(zip(cols, row.split("|")))
        tok = f["token"].strip().lower()
        if not WORD.fullmatch(tok):
            continue
        assert f["ts"].strip() and f["endTs"].strip(), row
        if not turns or turns[-1].speaker != f["speaker"]:
            turns.append(Turn(f["speaker"], []))
        turns[-1].words.append((tok, float(f["ts"]), float(f["endTs"])))
    return turns


def write_nlp(path: Path, turns: list[Turn]) -> Path:
    path.write_text("\n".join([HEADER] + [f"{w}|{t.speaker}|{a:.4f}|{b:.4f}||||[]"
                                          for t in turns for w, a, b in t.words]) + "\n")
    return path


def write_data_dir(d: Path, turns: list[Turn], *, speakers: bool = True, segments: bool = True,
                   ctm: bool = True) -> list[str]:
    """The turns as a Kaldi data directory, an utterance a turn of recording `call`: text, utt2spk (its speaker,
    else one speaker for all), segments (its first word's start to its last one's end) and a ctm (its words' times
    from the segment's start); the utterance ids, in time order."""
    d.mkdir(parents=True)
    ids = [f"call-{k:06d}" for k in range(1, len(turns) + 1)]
    (d / "text").write_text("".join(f"{u} {' '.join(w for w, _, _ in t.words)}\n" for u, t in zip(ids, turns)))
    (d / "utt2spk").write_text("".join(f"{u} {t.speaker if speakers else 'spk'}\n" for u, t in zip(ids, turns)))
    if segments:
        (d / "segments").write_text("".join(f"{u} call {t.words[0][1]:.4f} {t.words[-1][2]:.4f}\n"
                                            for u, t in zip(ids, turns)))
    if ctm:
        (d / "ctm").write_text("".join(f"{u} 1 {a - t.words[0][1]:.4f} {b - a:.4f} {w}\n"
                                       for u, t in zip(ids, turns) for w, a, b in t.words))
    return ids


def twocol_labels(path: Path) -> list[str]:
    return [ln.split("\t")[1] for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def decoded(model: str | Path, d: Path, out: Path) -> list[str]:
    cli("decode", model, d, out, "--format", "twocol", "-q")
    return twocol_labels(out)


def punctuated(model: str | Path, src: Path, out: Path) -> list[str]:
    cli("punctuate", src, "-m", model, "--format", "twocol", "-o", out, "-q")
    return twocol_labels(out)


def turn_ends(turns: list[Turn]) -> list[int]:
    """The index of each turn's last word but the last turn's (a turn change follows it)."""
    ends, n = [], 0
    for t in turns[:-1]:
        n += len(t.words)
        ends.append(n - 1)
    return ends


def fusion_pkg(d: Path, name: str, rows: list[int]) -> Path:
    """The fast model packed with a hand-made fusion: a period far likelier after the words of boundary ids
    `rows`, nothing else changed."""
    f = BoundaryFusion.identity(MARKS)
    bias = f.bias.copy()
    bias[rows, MARKS.index("PERIOD")] = 20.0
    (d / f"{name}.json").write_text(json.dumps(BoundaryFusion(MARKS, f.scale, bias, 1.0).to_dict()))
    cli("pack", "fast", "--boundary", d / f"{name}.json", "-o", d / f"{name}.pkt")
    return d / f"{name}.pkt"


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("fusions")
    return {"turns": fusion_pkg(d, "turns", [TURN_CHANGE * N_PAUSES + p for p in range(N_PAUSES)]),
            "pauses": fusion_pkg(d, "pauses", [t * N_PAUSES + N_PAUSES - 1 for t in range(N_TURNS)])}


def test_a_call_as_a_data_dir_decodes_as_punctuate_labels_the_call(tmp_path: Path) -> None:
    """An Earnings-22 call's head as an NLP file (speakers, word times) through punctuate and as a data directory
    (an utterance a turn: utt2spk, segments, ctm) through decode: the same labels with the shipped model; the same
    data directory without its speakers and times is labelled otherwise (they reach the model)."""
    if not CALL.is_file():
        pytest.skip(f"Earnings-22 calls not found at {CALL.parent}")
    turns = call_turns(CALL, 1500)
    assert len(turns) >= 3 and sum(len(t.words) for t in turns) > 1000
    offline = punctuated("fast", write_nlp(tmp_path / "call.nlp", turns), tmp_path / "p.tsv")
    write_data_dir(tmp_path / "dd", turns)
    labels = decoded("fast", tmp_path / "dd", tmp_path / "d.tsv")
    assert len(labels) == sum(len(t.words) for t in turns)
    assert labels == offline
    write_data_dir(tmp_path / "plain", turns, speakers=False, segments=False, ctm=False)
    assert decoded("fast", tmp_path / "plain", tmp_path / "plain.tsv") != labels


TURNS = [Turn("A", [("yeah", 0.0, 0.3)]),
         Turn("B", [(w, 3.0 + 0.2 * j, 3.15 + 0.2 * j) for j, w in enumerate("okay so what do you think".split())]),
         Turn("A", [(w, 6.0 + 0.2 * j, 6.15 + 0.2 * j) for j, w in enumerate("i think so".split())])]


def test_turn_changes_of_segments_reach_the_model(pkgs: dict[str, Path], tmp_path: Path) -> None:
    """With segments, a recording's utterances in time order are one stream and a change of speaker between two of
    them a turn change: a fusion that weighs turns ends each turn with a period, as punctuate does for the NLP file
    of the same turns; the same segments of one speaker get the network's own marks there."""
    ends = turn_ends(TURNS)
    for ctm in (False, True):  # segment edges, or the ctm's word times: the same turns
        write_data_dir(tmp_path / f"t{ctm}", TURNS, ctm=ctm)
        turned = decoded(pkgs["turns"], tmp_path / f"t{ctm}", tmp_path / f"t{ctm}.tsv")
        assert all(mark_of(turned[k]) == "PERIOD" for k in ends), turned
    assert turned == punctuated(pkgs["turns"], write_nlp(tmp_path / "t.nlp", TURNS), tmp_path / "p.tsv")
    write_data_dir(tmp_path / "one", TURNS, speakers=False)
    alone = decoded(pkgs["turns"], tmp_path / "one", tmp_path / "one.tsv")
    assert alone == decoded(network_only(tmp_path), tmp_path / "one", tmp_path / "net.tsv")  # the network alone


def test_ctm_pauses_inside_utterances_and_none_across_them_without_segments(pkgs: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    """Without segments a speaker's utterances are one stream as ever; a ctm gives the pauses between the words of
    an utterance (a second's pause after `there`: a period with a fusion that weighs long pauses), but none
    between utterances, whose times count from their own starts."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "text").write_text("a-1 so we went there and we left the\na-2 store yesterday\n")
    (d / "utt2spk").write_text("a-1 a\na-2 a\n")
    plain = decoded(pkgs["pauses"], d, tmp_path / "plain.tsv")
    assert plain == decoded("fast", d, tmp_path / "fast.tsv")  # no times: the network alone
    first = "so we went there and we left the".split()
    starts = [0.0, 0.2, 0.4, 0.6, 1.9, 2.1, 2.3, 2.5]  # 1.15 s after `there`
    (d / "ctm").write_text("".join(f"a-1 1 {s:.2f} 0.15 {w}\n" for s, w in zip(starts, first))
                           + "a-2 1 5.00 0.30 store\na-2 1 5.40 0.30 yesterday\n")
    timed = decoded(pkgs["pauses"], d, tmp_path / "timed.tsv")
    assert mark_of(plain[3]) != "PERIOD" and mark_of(timed[3]) == "PERIOD", (plain, timed)
    assert timed[7] == plain[7] and mark_of(plain[7]) == "O"  # `the`: no pause known before `store`


def test_a_data_dir_without_segments_or_ctm_labels_as_punctuate_of_its_text(tmp_path: Path) -> None:
    """Without segments or a ctm nothing changes: a speaker's utterances, in id order, are one stream, labelled as
    punctuate labels the directory's `text` (utt2spk beside it: a speaker's consecutive utterances run on)."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "text").write_text("a-1 yeah\na-2 i think so\nb-1 okay so what do you think\n")
    (d / "utt2spk").write_text("a-1 a\na-2 a\nb-1 b\n")
    labels = decoded("fast", d, tmp_path / "d.tsv")
    assert labels == punctuated("fast", d / "text", tmp_path / "p.tsv")
    (d / "segments").write_text("a-1 r 0.0 0.3\na-2 r 6.0 6.5\nb-1 r 3.0 4.2\n")  # the same, in a recording
    assert decoded("fast", d, tmp_path / "s.tsv") != labels


def test_bad_segments_and_ctm_are_one_line_errors(tmp_path: Path) -> None:
    d = tmp_path / "d"
    write_data_dir(d, TURNS)
    lines = (d / "segments").read_text().splitlines()
    (d / "segments").write_text("\n".join(lines[:-1]) + "\n")
    cli_error(cli("decode", "fast", d, tmp_path / "a.tsv", "--format", "twocol", ok=False),
              "segments", "no line for utterance 'call-000003'")
    (d / "segments").write_text("\n".join(lines) + "\n")
    (d / "ctm").write_text((d / "ctm").read_text().replace(" think", " thing", 1))
    cli_error(cli("decode", "fast", d, tmp_path / "b.tsv", "--format", "twocol", ok=False),
              "ctm", "thing", "think", at="ctm")
