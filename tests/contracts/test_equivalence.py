"""One labelling call (infer/engine.py, `Engine.label`): `punctkit decode`, `punctuate`, `serve` and offline
`--stream` give the same labels to the same words, with the shipped model (`load_model("fast")`)."""
from __future__ import annotations

import io
import itertools

import pytest

from punctkit import load_model
from punctkit.data.formats import read
from punctkit.data.labels import SENTENCE_END, mark_of
from punctkit.infer.stream import PunctStream, stream_lines

LINES = [
    "so i want to tell you about a trip i took to new york last year with my friend john",
    "we landed at the airport on a monday and the city was loud and cold and beautiful",
    "do you know what surprised me most it was not the buildings it was the people",
    "everyone was in a hurry but when we asked for directions they stopped and helped us",
    "my friend said this is the best city in the world and i think he was right",
    "what would you do if you had one week there would you go to the museums or the parks",
    "we did both and on the last day we walked across the bridge at night",
]


@pytest.fixture(scope="module")
def fast():
    return load_model("fast", threads=1)


@pytest.fixture(scope="module")
def offline(fast, tmp_path_factory):
    """`punctuate` on the lines as a plain-text file: one stream, one label per word."""
    from punctkit.punctuator import punctuate_file

    d = tmp_path_factory.mktemp("eq")
    (d / "words.txt").write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    punctuate_file(fast, d / "words.txt", d / "hyp.twocol", fmt="twocol")
    got, _ = read(d / "hyp.twocol")
    labels = [lab for u in got for lab in u.labels]
    assert len(labels) == sum(len(line.split()) for line in LINES)
    assert sum(mark_of(lab) in SENTENCE_END for lab in labels) >= 3  # not trivial: the model punctuates
    return d, labels


def test_decode_equals_punctuate(offline, tmp_path):
    """`punctkit decode -m fast` on a data directory of the lines (one speaker: one stream)."""
    from punctkit.decode_data import decode_dir

    data = tmp_path / "data"
    data.mkdir()
    (data / "text").write_text("".join(f"utt{k:02d} {line}\n" for k, line in enumerate(LINES)), encoding="utf-8")
    (data / "utt2spk").write_text("".join(f"utt{k:02d} talk\n" for k in range(len(LINES))), encoding="utf-8")
    decode_dir("fast", data, tmp_path / "dec.twocol", fmt="twocol", threads=1)
    dec, _ = read(tmp_path / "dec.twocol")
    assert [lab for u in dec for lab in u.labels] == offline[1]


def test_serve_equals_punctuate(fast, offline):
    """What `serve` runs for a POST /punctuate of the same text (in process: read, batch, write)."""
    pytest.importorskip("aiohttp")
    from punctkit import serve

    body = "".join(line + "\n" for line in LINES).encode()
    parsed = serve.parse_body(fast, body)
    done, = serve.label_batch(fast, [serve.Request(parsed)])
    assert [lab for d in done for lab in d.labels] == offline[1]
    text = serve.render(fast, parsed, done, serve.output_format("twocol", parsed))
    d = offline[0]
    assert text == (d / "hyp.twocol").read_text(encoding="utf-8")  # and through punctuate's own writer


def test_offline_stream_equals_punctuate(fast, offline):
    """`punctuate --stream` with unlimited look-ahead (the default), a line at a time."""
    state = PunctStream(fast, None, fast.casing())
    committed = []
    for line in LINES:
        committed += state.feed(line)
    committed += state.finish()
    assert [lab for _, lab, _ in committed] == offline[1]
    # the line protocol of --stream shows the words as punctuate's readable output does
    shown = " ".join(stream_lines(PunctStream(fast, None), io.StringIO("".join(line + "\n" for line in LINES))))
    assert shown.split() == fast.punctuate("\n".join(LINES)).split()


def test_decode_stream_in_segments_equals_whole(fast, offline, tmp_path):
    """`decode`'s units are a data directory's streams; one longer than `chunk_words` is labelled in
    segments (bounded memory) with the labels of the whole stream, and each of its utterances comes back
    whole, in order, with its words as the data directory has them."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.streams import make_streams

    data = tmp_path / "data"
    data.mkdir()
    (data / "text").write_text("".join(f"utt{k:02d} {line}\n" for k, line in enumerate(LINES)), encoding="utf-8")
    (data / "utt2spk").write_text("".join(f"utt{k:02d} talk\n" for k in range(len(LINES))), encoding="utf-8")
    streams = make_streams(read_data_dir(data, need_labels=False), fast.inventory)
    assert len(streams) == 1 and len(streams[0].words) > 100
    small = load_model("fast", threads=1, chunk_words=40)
    whole = list(fast.label(streams))
    parts = list(small.label(streams))
    assert [d.utt.uttid for d in parts] == [f"utt{k:02d}" for k in range(len(LINES))]
    assert [d.utt.words for d in parts] == [line.split() for line in LINES]
    assert [lab for d in parts for lab in d.labels] == [lab for d in whole for lab in d.labels] == offline[1]


def test_segments_start_on_the_grid_of_the_words_the_model_reads(fast):
    """A model that reads IWSLT's tokens splits `we're` into `we 're`, so its windows lie on a grid of more
    words than the input has; a long stream cut into segments (bounded memory) still gets each word the
    windows and labels of the whole stream. Real speech: the first 3,000 words of an Earnings-22 call."""
    from conftest import ROOT
    from label_util import words_labels
    from punctkit.data.formats.nlp import nlp_rows
    from punctkit.infer.engine import Segments, StreamWord, word_streams

    call = ROOT.parent / "shared" / "data" / "earnings22" / "calls" / "4329526.aligned.nlp"
    if not call.is_file():
        pytest.skip("the Earnings-22 copy in ../shared is missing")
    words = [row.token.lower() for _, row in itertools.islice(nlp_rows(call), 3000)]
    assert fast.frontend.split_contractions and sum("'" in w for w in words) >= 10
    small = load_model("fast", threads=1, chunk_words=200)  # segments of 200 words
    whole_rows = fast.scorer.distributions(word_streams([words]))[0].rows
    labels, rows_seg = small._rows(list(Segments(small)(StreamWord(w) for w in words)))
    assert abs(rows_seg - whole_rows).max() < 1e-9
    assert labels == words_labels(fast, words)


def test_decode_nbest_first_is_the_decision(fast):
    """n-best lists (decode --nbest) come from the same call: the first hypothesis is the decided
    labels, and each hypothesis has one label per word, its stream's last word ending a sentence."""
    from punctkit.data.streams import split_utterances
    from punctkit.infer.engine import word_streams

    streams = split_utterances(word_streams([line.split() for line in LINES[:3]]))
    for done in fast.label(streams, nbest=3):
        assert done.hyps is not None and 1 <= len(done.hyps) <= 3
        assert [fast.inventory.labels[i] for i in done.hyps[0].ids] == done.labels
        for h in done.hyps:
            assert len(h.ids) == len(done.utt.words)
            assert mark_of(fast.inventory.labels[h.ids[-1]]) in SENTENCE_END
