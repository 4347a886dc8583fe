"""Speaker turns and pauses as a cue to the marks (punctkit/decode/boundary.py, infer/boundary_fit.py): the boundary
ids, the fusion's arithmetic and its checks as package data, the same labels without turns or times, a turn change
that weighs, a fit that learns what the data says, and `pack --boundary`."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from punct_util import cli, network_only, units_of
from punctkit.data.boundaries import N_BOUNDARIES, N_PAUSES, NOTHING, TURN_CHANGE, boundaries, boundary_id, pause_bucket
from punctkit.data.labels import get_inventory
from punctkit.decode.boundary import BoundaryFusion
from punctkit.files import PunctkitError

HEADER = "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags"
INV = get_inventory("truecase4")
MARKS = ("O", "COMMA", "PERIOD", "QUESTION")


def nlp(rows: list[tuple[str, str, str, str]]) -> str:
    """An NLP file of (token, speaker, ts, endTs) rows, no marks, lower case."""
    return "\n".join([HEADER] + [f"{t}|{s}|{a}|{b}||||[]" for t, s, a, b in rows]) + "\n"


def strong_turns(weight: float = 1.0) -> BoundaryFusion:
    """A hand-made fusion: a turn change makes a period far likelier, nothing else changes."""
    f = BoundaryFusion.identity(MARKS)
    bias = f.bias.copy()
    for pause in range(N_PAUSES):
        bias[TURN_CHANGE * N_PAUSES + pause, MARKS.index("PERIOD")] = 20.0
    return BoundaryFusion(MARKS, f.scale, bias, weight)


def test_boundary_ids() -> None:
    assert pause_bucket(None) == 0 and pause_bucket(float("nan")) == 0
    assert [pause_bucket(g) for g in (-0.3, 0.0, 0.1, 0.3, 0.7, 1.0, 9.0)] == [1, 1, 2, 3, 4, 5, 5]
    speakers = ["A", "A", "B", None, None]
    times = [(0.0, 0.5), (0.5, 0.9), (2.0, 2.4), (None, None), (3.0, 3.5)]
    ids = boundaries(speakers, times)
    assert ids == [boundary_id(0, 0.0), boundary_id(TURN_CHANGE, 1.1), boundary_id(0, None),
                   boundary_id(0, None), NOTHING]
    assert ids[2] == NOTHING  # a speaker unknown and no time: nothing known
    assert boundaries([None] * 3, [(None, None)] * 3) == [NOTHING] * 3


def test_fusion_leaves_rows_of_nothing_known_and_renormalises() -> None:
    rng = np.random.default_rng(1)
    rows = rng.dirichlet(np.ones(len(INV.labels)), size=6)
    f = strong_turns()
    ids = [NOTHING, TURN_CHANGE * N_PAUSES, NOTHING, 3, NOTHING, TURN_CHANGE * N_PAUSES + 5]
    out = f.apply(rows, ids, INV)
    assert np.array_equal(out[[0, 2, 4]], rows[[0, 2, 4]])
    assert np.allclose(out.sum(axis=1), 1.0)
    periods = [INV.index(lab) for lab in INV.labels if lab.endswith("_PERIOD")]
    assert out[1, periods].sum() > 0.99 and out[5, periods].sum() > 0.99
    assert np.allclose(out[3], rows[3])  # pause bucket with no bias and scale 1: the same distribution
    assert np.array_equal(f.with_weight(0.0).apply(rows, ids, INV)[[1, 5]].round(12), rows[[1, 5]].round(12))


@pytest.mark.parametrize("bad", [
    {"scale": [float("nan")] * N_BOUNDARIES},
    {"scale": [1.0] * (N_BOUNDARIES - 1)},
    {"bias": [[1e6] * 4] * N_BOUNDARIES},
    {"weight": -1},
    {"pause_edges": [0.1, 0.2, 0.5, 1.0]},
    {"marks": "O"},
    {"format": 2},
])
def test_fusion_data_is_checked(bad: dict) -> None:
    d = {**BoundaryFusion.identity(MARKS).to_dict(), **bad}
    with pytest.raises(PunctkitError):
        BoundaryFusion.from_dict(d, "x.json")


@pytest.fixture(scope="module")
def turns_pkg(tmp_path_factory) -> Path:
    """The fast model packed with the hand-made fusion (`pack --boundary`)."""
    d = tmp_path_factory.mktemp("boundary")
    (d / "b.json").write_text(json.dumps(strong_turns().to_dict()))
    cli("pack", "fast", "--boundary", d / "b.json", "-o", d / "fast_turns.pkt")
    return d / "fast_turns.pkt"


def test_pack_boundary_is_a_member_on_the_card_and_checked(turns_pkg: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(turns_pkg) as z:
        assert "boundary.json" in z.namelist()
        card = json.loads(z.read("punctkit.json"))["card"]
    assert card["boundary"]["weight"] == 1.0
    # a package whose boundary.json is not finite: one line on loading
    bad = tmp_path / "bad.pkt"
    with zipfile.ZipFile(turns_pkg) as src, zipfile.ZipFile(bad, "w") as dst:
        for i in src.infolist():
            data = src.read(i)
            if i.filename == "boundary.json":
                d = json.loads(data)
                d["bias"][1][0] = "NaN"
                data = json.dumps(d).encode()
            dst.writestr(i, data)
    (tmp_path / "in.txt").write_text("hello there\n")
    r = cli("punctuate", tmp_path / "in.txt", "-m", bad, ok=False)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "boundary.json" in r.stderr, r.stderr
    # --boundary is for a package, and its file is checked before anything is written
    (tmp_path / "nan.json").write_text('{"format": 1}')
    r = cli("pack", "fast", "--boundary", tmp_path / "nan.json", "-o", tmp_path / "x.pkt", ok=False)
    assert r.returncode == 1 and "nan.json" in r.stderr and not (tmp_path / "x.pkt").exists(), r.stderr


def test_without_turns_or_times_the_labels_are_the_networks(turns_pkg: Path, tmp_path: Path) -> None:
    text = "yeah okay so what do you think i think so and then we went to new york last week\nright\n"
    (tmp_path / "a.txt").write_text(text)
    rows = [(w, "0", "", "") for w in text.split()]
    (tmp_path / "a.nlp").write_text(nlp(rows))
    for f, fmt in (("a.txt", "readable"), ("a.nlp", "nlp")):
        plain = cli("punctuate", tmp_path / f, "--format", fmt).stdout
        fused = cli("punctuate", tmp_path / f, "--format", fmt, "-m", turns_pkg).stdout
        assert plain == fused


def test_a_turn_change_weighs(turns_pkg: Path, tmp_path: Path) -> None:
    rows = [("yeah", "A", "", ""), ("okay", "B", "", ""), ("so", "B", "", ""), ("what", "B", "", ""),
            ("do", "B", "", ""), ("you", "B", "", ""), ("think", "B", "", ""), ("i", "A", "", ""),
            ("think", "A", "", ""), ("so", "A", "", "")]
    (tmp_path / "t.nlp").write_text(nlp(rows))
    out = cli("punctuate", tmp_path / "t.nlp", "-m", turns_pkg).stdout.split("\n")
    assert out[0].rstrip() == "Yeah." and out[1].rstrip()[-1] in ".?!", out
    # the same words without turns: the network alone (no period forced after `yeah`)
    same = [(t, "0", a, b) for t, _, a, b in rows]
    (tmp_path / "s.nlp").write_text(nlp(same))
    assert cli("punctuate", tmp_path / "s.nlp", "-m", turns_pkg).stdout == cli("punctuate", tmp_path / "s.nlp").stdout


def test_one_stream_and_lines_of_one_unit_fuse_alike(turns_pkg: Path, tmp_path: Path) -> None:
    """punctuate reads an NLP file as one stream (`_one_stream`, ids decided a word late); the same lines given
    to `Engine.label` as one unit (`_batched`) and in segments of 40 words fuse and label alike."""
    from punctkit import load_model
    from punctkit.data.formats.nlp import nlp_units

    words = ("so we looked at the numbers and they were fine yeah i agree with that but what about the next "
             "quarter do you think it will hold up well i hope so").split()
    rows, t = [], 0.0
    for k, w in enumerate(words):
        spk = "A" if (k // 7) % 2 == 0 else "B"
        rows.append((w, spk, f"{t:.2f}", f"{t + 0.3:.2f}"))
        t += 0.3 + (1.2 if k % 7 == 6 else 0.02)
    (tmp_path / "c.nlp").write_text(nlp(rows))
    labels = []
    for chunk in (10000, 40):
        p = load_model(turns_pkg, threads=1, chunk_words=chunk)
        units = units_of(nlp_units, tmp_path / "c.nlp", p.inventory)
        assert len({u.speaker for u in units}) == 2
        labels.append([lab for d in p.label(units, one_stream=True) for lab in d.labels])
        labels.append([lab for d in p.label([units]) for lab in d.labels])
    assert all(x == labels[0] for x in labels), labels


def test_fit_learns_what_turns_say() -> None:
    """Documents whose turn changes end sentences and whose other words do not: the fit learns a period bias for
    a turn change, and none for words nothing is known after (the network alone)."""
    from punctkit.data.utterance import Utterance
    from punctkit.infer.boundary_fit import Doc, Variant, fit

    rng = np.random.default_rng(3)
    docs = []
    for d in range(4):
        n = 400
        speakers = [f"S{(k // 9) % 2}" for k in range(n)]
        rows = rng.dirichlet(np.ones(len(INV.labels)) * 2, size=n).astype(np.float32)
        change = [k + 1 < n and speakers[k] != speakers[k + 1] for k in range(n)]
        targets = np.array([INV.index("L_PERIOD") if c else INV.index("L_O") for c in change])
        docs.append(Doc(f"d{d}", [], rows, targets, speakers, [(None, None)] * n,
                        [Utterance(f"d{d}", ["w"] * n, [INV.labels[i] for i in targets])]))
    f = fit(docs, INV, variants=[Variant(True, False)])
    turn = TURN_CHANGE * N_PAUSES
    assert f.bias[turn, MARKS.index("PERIOD")] > f.bias[turn, MARKS.index("O")] + 2
    assert not f.bias[NOTHING].any() and f.scale[NOTHING] == 1.0
    assert f.bias[0 * N_PAUSES + 0].sum() == 0 and N_BOUNDARIES == 2 * N_PAUSES


def test_stream_with_speakers_labels_as_punctuate_of_the_turns(turns_pkg: Path, tmp_path: Path) -> None:
    """`--stream` JSON lines with a `speaker` each (a diarized recognizer's finals) and the same turns as an NLP file
    give the same words, marks and case (`decode = punctuate = serve = stream`, with turns)."""
    turns = [("A", "yeah"), ("B", "okay so what do you think"), ("A", "i think so"), ("B", "right"),
             ("A", "and then we went to new york last week")]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps({"text": t, "speaker": s}) + "\n" for s, t in turns))
    (tmp_path / "t.nlp").write_text(nlp([(w, s, "", "") for s, t in turns for w in t.split()]))
    for m in ("fast", turns_pkg):
        streamed = " ".join(cli("punctuate", "--stream", tmp_path / "s.jsonl", "-m", m).stdout.split())
        offline = " ".join(cli("punctuate", tmp_path / "t.nlp", "-m", m).stdout.split())
        assert streamed == offline
    assert streamed.startswith("Yeah.")
    (tmp_path / "bad.jsonl").write_text('{"text": "yeah", "speaker": [1]}\n')
    r = cli("punctuate", "--stream", tmp_path / "bad.jsonl", ok=False)
    assert r.returncode == 1 and "speaker" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


TURNS = [("A", "yeah"), ("B", "okay so what do you think"), ("A", "i think so")]


def turns_as(fmt: str, speakers: bool) -> str:
    """TURNS in a format that carries speakers (each turn a second apart), with or without them."""
    spk = (lambda s: s) if speakers else (lambda s: "X")
    t = [(k * 3.0, k * 3.0 + 2.0) for k in range(len(TURNS))]
    if fmt == "stm":
        return "".join(f"rec 1 {spk(s)} {a:.2f} {b:.2f} {text}\n" for (s, text), (a, b) in zip(TURNS, t))
    if fmt == "whisperx":
        segs = [{"start": a, "end": b, "text": " " + text, **({"speaker": s} if speakers else {}),
                 "words": [{"word": w, "start": a + 0.2 * j, "end": a + 0.2 * j + 0.15}
                           for j, w in enumerate(text.split())]}
                for (s, text), (a, b) in zip(TURNS, t)]
        return json.dumps({"segments": segs})
    if fmt == "aws":
        items = [{"type": "pronunciation", "start_time": f"{a + 0.2 * j:.2f}", "end_time": f"{a + 0.2 * j + 0.15:.2f}",
                  "alternatives": [{"content": w, "confidence": "0.9"}],
                  **({"speaker_label": f"spk_{s}"} if speakers else {})}
                 for (s, text), (a, b) in zip(TURNS, t) for j, w in enumerate(text.split())]
        return json.dumps({"jobName": "x", "results": {"transcripts": [{"transcript": ""}], "items": items}})
    raise ValueError(fmt)


@pytest.mark.parametrize("fmt,ext", [("stm", "stm"), ("whisperx", "json"), ("aws", "json")])
def test_speakers_of_every_kind_of_input_reach_the_model(turns_pkg: Path, tmp_path: Path, fmt: str, ext: str) -> None:
    """A turn change read from an stm's speakers, WhisperX's segments and a service's labels weighs as an NLP
    file's does (the hand-made fusion: a period); the same file without speakers does not get one from it (its marks
    are the network's alone)."""
    outs = {}
    for speakers in (True, False):
        f = tmp_path / f"{fmt}_{speakers}.{ext}"
        f.write_text(turns_as(fmt, speakers))
        outs[speakers] = cli("punctuate", f, "-m", turns_pkg, "--format", "timed-json").stdout
    marks = {k: [w.get("mark") for line in v.splitlines() for w in json.loads(line)["words"]] for k, v in outs.items()}
    ends = [len(TURNS[0][1].split()) - 1, len(TURNS[0][1].split()) + len(TURNS[1][1].split()) - 1]
    assert all(marks[True][k] in ("PERIOD", ".") for k in ends), (outs[True], marks[True])
    f = tmp_path / f"{fmt}_False.{ext}"  # without speakers, the fusion weighs nothing: the network's own marks
    alone = cli("punctuate", f, "-m", network_only(tmp_path), "--format", "timed-json").stdout
    assert marks[False] == [w.get("mark") for line in alone.splitlines() for w in json.loads(line)["words"]]


def test_plain_text_lines_as_a_stream_turns_or_documents(turns_pkg: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("so what do you\nthink nasa will do next\nyeah\nokay i met them in new york\n")
    default = cli("punctuate", tmp_path / "a.txt").stdout
    assert cli("punctuate", tmp_path / "a.txt", "--lines", "stream").stdout == default
    first = default.splitlines()[0]
    assert first[-1] not in ".?!" and default.splitlines()[1][0].islower()  # a sentence runs on across lines
    docs = cli("punctuate", tmp_path / "a.txt", "--lines", "documents").stdout.splitlines()
    assert all(line[0].isupper() and line[-1] in ".?!" for line in docs), docs  # each line its own document
    # turns: a model whose fusion weighs nothing reads them as the stream; with one, each line break is a turn change
    (tmp_path / "zero.json").write_text(json.dumps(BoundaryFusion.identity(MARKS).with_weight(0.0).to_dict()))
    cli("pack", "fast", "--boundary", tmp_path / "zero.json", "-o", tmp_path / "zero.pkt")
    assert cli("punctuate", tmp_path / "a.txt", "--lines", "turns", "-m", tmp_path / "zero.pkt").stdout == default
    turns = cli("punctuate", tmp_path / "a.txt", "--lines", "turns", "-m", turns_pkg).stdout.splitlines()
    assert all(line[-1] in ".?!" for line in turns), turns
    (tmp_path / "t.nlp").write_text(nlp([("yeah", "0", "", "")]))
    for args in (["--lines", "turns", tmp_path / "t.nlp"], ["--stream", "--lines", "turns", tmp_path / "a.txt"]):
        r = cli("punctuate", *args, ok=False)
        assert r.returncode == 1 and "--lines" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
