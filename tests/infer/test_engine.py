"""The one engine object and its one loader (infer/engine.py: `load_model`, which `punctkit.load` wraps): an
ensemble is a scorer that fuses each member's turns and pauses before it averages (#79), one model where one
goes, and each `Labelled` says whether its words begin or end their stream."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import punctkit
from punctkit.files import PunctkitError
from punctkit.infer import Engine, Ensemble, load_model

ROOT = Path(__file__).resolve().parents[2]
CALL = ROOT.parent / "shared" / "data" / "earnings22" / "calls" / "4470684.aligned.nlp"  # its head: timed, turns


@pytest.fixture(scope="module")
def call_head(tmp_path_factory) -> Path:
    """The first 1,500 lines of an Earnings-22 call (Rev's NLP format: speakers and word times)."""
    if not CALL.is_file():
        pytest.skip("the Earnings-22 copy in ../shared is missing")
    out = tmp_path_factory.mktemp("call") / "head.nlp"
    out.write_text("\n".join(CALL.read_text(encoding="utf-8").splitlines()[:1500]) + "\n", encoding="utf-8")
    return out


def _labelled(engine: Engine, src: Path) -> tuple[list[str], np.ndarray]:
    """Every word's label and distribution, the NLP file read as `punctuate` reads it."""
    done = list(punctkit.Model(engine).label_file(src, probs=True))
    return [lab for d in done for lab in d.labels], np.concatenate([d.rows for d in done])


def test_an_ensemble_fuses_each_members_turns_and_pauses(call_head):
    """`fast` averaged with itself over a call with speakers and times labels as `fast` alone, its boundary
    fusion applied (to each member before the average); without the members' fusions the labels differ at turns."""
    one = load_model("fast", threads=1)
    two = load_model(["fast", "fast"], threads=1)
    assert isinstance(two.scorer, Ensemble) and two.scorer.uses_boundaries and one.scorer.uses_boundaries
    labels, rows = _labelled(one, call_head)
    e_labels, e_rows = _labelled(two, call_head)
    assert len(labels) > 1000 and np.abs(e_rows - rows).max() < 1e-9
    assert e_labels == labels
    unfused = Engine(scorer=two.scorer.without_boundaries())
    u_labels, u_rows = _labelled(unfused, call_head)
    assert np.abs(u_rows - rows).max() > 0.01 and u_labels != labels  # the fusion reaches the ensemble's labels
    # and the command line: punctuate -m fast -m fast writes what -m fast writes
    from punct_util import cli

    once = cli("punctuate", call_head, "-m", "fast", "--threads", 1).stdout
    assert cli("punctuate", call_head, "-m", "fast", "-m", "fast", "--threads", 1).stdout == once


def test_an_ensemble_streams_with_its_members_fusions(call_head):
    """`--stream` of the ensemble, fed the call's words one at a time with their speakers and times, commits what
    `fast` alone commits, and not what the members without their fusions commit: turns and pauses reach each
    member's fusion."""
    from punctkit.infer.stream import PunctStream

    fed = [(w, d.utt.speaker, t) for d in punctkit.load("fast").label_file(call_head) for w, t in zip(d.words, d.times)]
    assert len({speaker for _, speaker, _ in fed}) > 1 and all(t[0] is not None for _, _, t in fed)

    def streamed(engine: Engine) -> list[str]:
        s = PunctStream(engine)
        out = [shown for word, speaker, times in fed for _, _, shown in s.feed([word], speaker, times)]
        return out + [shown for _, _, shown in s.finish()]

    one = streamed(load_model("fast", threads=1))
    two = load_model(["fast", "fast"], threads=1)
    assert streamed(two) == one
    assert streamed(Engine(scorer=two.scorer.without_boundaries())) != one


def test_one_model_where_one_goes_and_no_model_is_an_error():
    """`single`: an ensemble (several models) is a one-line error; an empty list of models too."""
    with pytest.raises(PunctkitError, match="fast, fast: an ensemble of 2 models: give one packed model here"):
        load_model(["fast", "fast"], single=True)
    with pytest.raises(PunctkitError, match="no model given"):
        load_model([])
    assert isinstance(punctkit.load("fast").engine, Engine)


def test_labelled_says_whether_it_starts_or_ends_its_stream():
    """A unit's `starts`/`ends`: its words hold its stream's first/last word (lines without words: neither);
    independent units each start and end theirs; lines of one stream, read as one stream or as a unit of lines."""
    engine = load_model("fast", threads=1)
    done = list(engine(["so what do you think", "", "i think so"]))
    assert [(d.starts, d.ends) for d in done] == [(True, True), (False, False), (True, True)]
    lines = ["", "so what do you think", "", "well i think so", "and you", ""]
    streamed = list(engine(lines, one_stream=True))
    assert [(d.starts, d.ends) for d in streamed] == [(False, False), (True, False), (False, False), (False, False),
                                                      (False, True), (False, False)]
    from punctkit.infer.engine import text_unit

    unit = [text_unit(t, engine.inventory, "s0", n) for n, t in enumerate(lines, 1)]
    assert [(d.starts, d.ends) for d in engine([unit])] == [(d.starts, d.ends) for d in streamed]
    assert [d.labels for d in engine([unit])] == [d.labels for d in streamed]
    # a long stream in segments too (chunk_words: a few words a segment)
    small = load_model("fast", threads=1, chunk_words=8)
    words = " ".join(["so what do you think about it"] * 30).split()
    chunked = list(small([" ".join(words[i:i + 7]) for i in range(0, len(words), 7)], one_stream=True))
    assert chunked[0].starts and chunked[-1].ends and not any(d.starts or d.ends for d in chunked[1:-1])


def test_every_unit_given_is_made_the_engine_s_one_unit_at_its_entry():
    """`Engine.label` takes a text, a list of words, an utterance, a list of utterances (lines of one stream), a
    reader's `StreamLines` and a data directory's `Stream` (public: punctkit.load(...).label); each is made the
    engine's one `Unit`, the lines of one stream (`unit_of`), and labelled as that unit is: the same words give the
    same labels however they came, lines of one stream starting and ending it once."""
    from punctkit.data.formats import StreamLines
    from punctkit.infer.engine import Unit, as_unit, text_unit, unit_of, word_streams

    engine = load_model("fast", threads=1)
    inv = engine.inventory
    words = "so what do you think i think it is fine".split()
    lines = [text_unit(" ".join(words[:5]), inv, "a", 1), text_unit(" ".join(words[5:]), inv, "b", 2)]
    stream = word_streams([words])[0]
    given = [" ".join(words), words, as_unit(words, uttid="u"), lines, StreamLines(lines, "rec 1"), stream]
    units = [unit_of(g, inv, f"s{k}") for k, g in enumerate(given)]
    assert Unit is StreamLines and all(isinstance(u, StreamLines) for u in units)
    assert [u.words for u in units] == [words] * len(given)
    assert units[4] is given[4] and units[3].lines == lines and units[5].stream is stream and units[5].key == "s0"
    assert [[ln.uttid for ln in u.lines] for u in units] == [["s0"], ["s1"], ["u"], ["a", "b"], ["a", "b"], ["s0"]]
    done = list(engine.label(given))
    made = list(engine.label(units))
    assert [(d.utt.uttid, d.labels, d.shown, d.starts, d.ends) for d in done] == \
        [(d.utt.uttid, d.labels, d.shown, d.starts, d.ends) for d in made]
    by_unit: dict[int, list[str]] = {}
    at = 0
    for k, u in enumerate(units):
        mine = done[at:at + len(u.lines)]
        at += len(u.lines)
        by_unit[k] = [lab for d in mine for lab in d.labels]
        assert [(d.starts, d.ends) for d in mine] == ([(True, True)] if len(mine) == 1 else [(True, False),
                                                                                             (False, True)])
    assert all(labels == by_unit[0] for labels in by_unit.values())
    # read as one stream as it comes (`one_stream`), the unit of lines gives the same
    assert [d.labels for d in engine.label([units[3]], one_stream=True)] == [d.labels for d in done[3:5]]
