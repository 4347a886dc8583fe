from pathlib import Path

import pytest

from punct_util import cli, decode_reads_its_turns, twocol_marks
from punctkit.data.datadir import read_data_dir, read_table
from punctkit.data.formats import Utterance, read
from punctkit.data.labels import INVENTORIES
from punctkit.data.prepare import parse_chunk_spec, prepare, rechunk, stats
from punctkit.files import PunctkitError


def stream(n):
    return [Utterance("s", [f"w{i}" for i in range(n)], ["PERIOD" if i % 7 == 6 else "O" for i in range(n)])]


def test_chunk_spec():
    assert parse_chunk_spec("25-50,50-75") == [(25, 50), (50, 75)]
    assert parse_chunk_spec("60") == [(60, 60)]
    for bad in ("0", "50-25", "x", "10-"):
        with pytest.raises(PunctkitError):
            parse_chunk_spec(bad)


def test_rechunk_deterministic_and_complete():
    a = rechunk(stream(1000), "25-50,50-75", seed=3, prefix="t")
    b = rechunk(stream(1000), "25-50,50-75", seed=3, prefix="t")
    c = rechunk(stream(1000), "25-50,50-75", seed=4, prefix="t")
    assert [(u.uttid, u.words) for u in a] == [(u.uttid, u.words) for u in b]
    assert [len(u.words) for u in a] != [len(u.words) for u in c]
    for k, (lo, hi) in ((1, (25, 50)), (2, (50, 75))):
        part = [u for u in a if u.uttid.startswith(f"t-r{k}-")]
        assert [w for u in part for w in u.words] == stream(1000)[0].words  # one full copy per range
        assert all(lo <= len(u.words) <= hi for u in part[:-1])
    fixed = rechunk(stream(130), "60", seed=1, prefix="f")
    assert [len(u.words) for u in fixed] == [60, 60, 10]


def test_rechunk_sentences_keeps_each_sentence_whole(tmp_path):
    assert parse_chunk_spec("sentences") == []
    utts = rechunk(stream(30), "sentences", seed=1, prefix="s")
    assert [len(u.words) for u in utts] == [7, 7, 7, 7, 2]  # a PERIOD every 7th word; the rest is the last
    assert all(u.labels[-1] == "PERIOD" for u in utts[:-1]) and [u.uttid for u in utts][:2] == ["s-000001", "s-000002"]
    assert [w for u in utts for w in u.words] == stream(30)[0].words
    src = tmp_path / "talk.txt"
    src.write_text("Hello there, friend. How are you?\n\nFine, thanks! And you\n")
    prepare([src], tmp_path / "d", rechunk_spec="sentences")
    dd = read_data_dir(tmp_path / "d")
    assert [" ".join(u.words) for u in dd.utterances] == ["Hello there friend", "How are you", "Fine thanks",
                                                          "And you"]
    assert all(dd.utt2spk[u.uttid] == u.uttid for u in dd.utterances)  # each sentence its own stream


def test_prepare_stream_blocks(tmp_path):
    src = tmp_path / "dev"
    src.write_text("".join(f"w{i}\t{'PERIOD' if i % 5 == 4 else 'O'}\n" for i in range(250)))
    rep = prepare([src], tmp_path / "data", block_len=100, lines=(1, 230))
    dd = read_data_dir(tmp_path / "data")
    assert [len(u.words) for u in dd.utterances] == [100, 100, 30]
    assert [u.uttid for u in dd.utterances] == ["data-000001", "data-000002", "data-000003"]
    assert set(dd.utt2spk.values()) == {"data"}
    assert dd.utterances[2].words[-1] == "w229"
    assert sum(rep.repairs.values()) == 0
    assert "utterances: 3  words: 230" in (tmp_path / "data" / "prepare.log").read_text()
    assert read_table(tmp_path / "data" / "spk2utt")["data"].split() == [u.uttid for u in dd.utterances]


def test_prepare_text_lines_and_rechunk(tmp_path):
    src = tmp_path / "talk.txt"
    src.write_text("Hello there, friend. How are you?\n\nFine, thanks!\n")
    prepare([src], tmp_path / "d", inventory="case4")
    dd = read_data_dir(tmp_path / "d")
    assert dd.inventory.name == "case4"
    assert dd.utterances[0].labels == ["U_O", "L_COMMA", "L_PERIOD", "U_O", "L_O", "L_QUESTION"]
    assert len(dd.utterances) == 2 and dd.utt2spk[dd.utterances[0].uttid] == dd.utterances[0].uttid
    prepare([src], tmp_path / "r", rechunk_spec="3", seed=1)
    assert [len(u.words) for u in read_data_dir(tmp_path / "r").utterances] == [3, 3, 2]


def test_prepare_strict_names_file_and_line(tmp_path):
    src = tmp_path / "dev"
    src.write_text("a\tO\nâ™?b\tO\n")
    with pytest.raises(PunctkitError, match=r"dev:2: mojibake"):
        prepare([src], tmp_path / "d", strict=True)
    assert not (tmp_path / "d").exists()


def test_stats_rows():
    utts = [Utterance("u", ["a", "b", "c", "d"], ["COMMA", "O", "PERIOD", "QUESTION"])]
    rows = {r[0]: r[1:] for r in stats(utts, INVENTORIES["4class"])}
    assert rows["words"][0] == 4 and rows["sentences"][0] == 2
    assert rows["COMMA"] == (1, 25.0) and rows["O"] == (1, 25.0)


def test_prepare_iwslt_dev_counts_every_repair(iwslt, tmp_path):
    rep = prepare([iwslt / "dev2012"], tmp_path / "d", block_len=100, lines=(18700, 18900))
    assert rep.repairs["mojibake or symbols repaired"] > 10
    dd = read_data_dir(tmp_path / "d")
    n_lines = 201
    dropped = sum(n for k, n in rep.repairs.items() if k.startswith("token without a word"))
    assert dd.words() == n_lines - dropped


def test_utterance_ids_are_one_word(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("hello there. how are you?\n")
    with pytest.raises(PunctkitError, match=r"^--name 'my talk': the utterance id prefix must be one word"):
        prepare([src], tmp_path / "d", name="my talk")
    assert not (tmp_path / "d").exists()
    prepare([src], tmp_path / "my data")  # the default prefix, the directory's name, joined by _
    text = read_table(tmp_path / "my data" / "text")
    assert text and all(k.startswith("my_data-") and len(k.split()) == 1 for k in text), list(text)


# ---------------------------------------------------------------- published text (TED): repairs, streams, lists

TALK = """
Translator: Joseph Geni
Reviewer: Morton Bast
I&#39;ve noticed something, and it&#39;s &quot;odd&quot;
(Laughter)
-- you don&#39;t see it (along with me) [Music]
at Ben &amp; Jerry&#39;s. (Applause)
"""


def published(tmp_path, name="Ben_Jerry's_talk.md", text=TALK):
    src = tmp_path / name
    src.write_text(text)
    return src


def all_repairs():
    from punctkit.data.formats.text import TextOptions, line_pattern
    return TextOptions(html=True, notes=True, drop_lines=line_pattern("(Translator|Reviewer):"),
                       split_contractions=True, one_stream=True)


def test_published_text_repairs_each_counted_with_file_and_line(tmp_path):
    src = published(tmp_path)
    rep = prepare([src], tmp_path / "d", fmt="text", inventory="truecase4", text_opts=all_repairs(), strict=True)
    dd = read_data_dir(tmp_path / "d")
    assert len(dd.utterances) == 1 and dd.utterances[0].uttid == "d"  # one stream: the file
    words, labels = dd.utterances[0].words, dd.utterances[0].labels
    assert words == ["I've", "noticed", "something", "and", "it", "'s", "odd", "you", "do", "n't", "see", "it",
                     "along", "with", "me", "at", "Ben", "Jerry", "'s"]
    # the line starting `--` gives its mark to the line before; `do` before `n't` is O
    assert labels[6] == "L_COMMA" and labels[8:10] == ["L_O", "L_O"] and labels[-1] == "L_PERIOD"
    log = (tmp_path / "d" / "prepare.log").read_text()
    assert rep.repairs == {"line dropped (--drop-lines)": 2, "HTML entity decoded (--decode-html)": 7,
                           "stage or sound note removed (--drop-notes)": 3,
                           "contraction split (--split-contractions)": 3}
    for kind, example in (("line dropped (--drop-lines): 2", f"{src}:2: Translator: Joseph Geni"),
                          ("HTML entity decoded (--decode-html): 7", f"{src}:4: &#39; -> '"),
                          ("stage or sound note removed (--drop-notes): 3", f"{src}:5: (Laughter)"),
                          ("contraction split (--split-contractions): 3", f"{src}:6: don't -> do n't")):
        assert f"  {kind}\n" in log and f"e.g. {example}\n" in log, (kind, log)
    assert "options: --decode-html --drop-notes --split-contractions --one-stream --drop-lines" in log



def test_letters_joined_by_ampersand_are_one_word_and_twice_escaped_entities_decode(tmp_path):
    """`AT&T`, `R&D`, `Q&A` are one word as Rev's transcripts, the calls and punctuate have them, in
    their case (U); `&amp;quot;` (escaped twice, as in some of TED's transcripts) is a quote, not a word."""
    src = published(tmp_path, "t.md", "We met AT&amp;T&#39;s R&amp;D team, &amp;quot;fine&amp;quot; said Q&amp;A.\n")
    rep = prepare([src], tmp_path / "d", fmt="text", inventory="truecase4", text_opts=all_repairs(), strict=True)
    u = read_data_dir(tmp_path / "d").utterances[0]
    assert u.words == ["We", "met", "AT&T", "'s", "R&D", "team", "fine", "said", "Q&A"]
    assert [u.labels[k] for k in (2, 4, 5, 8)] == ["U_O", "U_O", "L_COMMA", "U_PERIOD"]
    assert rep.repairs["HTML entity decoded (--decode-html)"] == 8

def test_without_the_options_published_text_reads_as_before(tmp_path):
    src = published(tmp_path)
    prepare([src], tmp_path / "d", fmt="text", inventory="truecase4")
    words = [w for u in read_data_dir(tmp_path / "d").utterances for w in u.words]
    assert "Translator" in words and "Laughter" in words and words[words.index("don"):][:3] == ["don", "39", "t"]


def test_stream_blocks_take_ids_from_a_file_list(tmp_path):
    a = published(tmp_path, "a.md", "One two, three.\nFour five\n-- six seven? Eight\n")
    b = published(tmp_path, "b'c.md", "Nine ten.\n")
    lst = tmp_path / "talks.scp"
    lst.write_text(f"talkA {a}\ntalkB {b}\n")
    from punctkit.data.formats.text import TextOptions
    prepare([], tmp_path / "d", fmt="text", block_len=3, file_list=lst, text_opts=TextOptions(one_stream=True))
    dd = read_data_dir(tmp_path / "d")
    assert [(u.uttid, u.words) for u in dd.utterances] == [
        ("talkA-000001", ["One", "two", "three"]), ("talkA-000002", ["Four", "five", "six"]),
        ("talkA-000003", ["seven", "Eight"]), ("talkB-000001", ["Nine", "ten"])]
    assert dd.utterances[1].labels == ["O", "COMMA", "O"]  # `five` takes the `--` starting the next line
    assert dd.utt2spk == {"talkA-000001": "talkA", "talkA-000002": "talkA", "talkA-000003": "talkA",
                          "talkB-000001": "talkB"}
    assert "--file-list" in (tmp_path / "d" / "prepare.log").read_text().splitlines()[0]


@pytest.mark.parametrize("lines, message", [
    ("talkA {a}\ntalkA {a}\n", r"talks.scp:2: id 'talkA' is listed twice"),
    ("talkA {a}\ntalkB {a}.missing\n", r"talks.scp:2: no such file: .*a.md.missing"),
    ("justone\n", r"talks.scp:1: expected 'id path'"),
    ("\n", r"talks.scp: lists no input"),
])
def test_file_list_errors_name_the_line(tmp_path, lines, message):
    a = published(tmp_path, "a.md", "One two.\n")
    lst = tmp_path / "talks.scp"
    lst.write_text(lines.format(a=a))
    with pytest.raises(PunctkitError, match=message):
        prepare([], tmp_path / "d", file_list=lst)
    with pytest.raises(PunctkitError, match="either as arguments or as --file-list"):
        prepare([a], tmp_path / "d", file_list=lst)
    assert not (tmp_path / "d").exists()


def test_text_repairs_refuse_labelled_inputs_and_bad_patterns(tmp_path):
    from punctkit.data.formats.text import TextOptions, line_pattern
    src = tmp_path / "dev"
    src.write_text("a\tO\nb\tPERIOD\n")
    with pytest.raises(PunctkitError, match=r"dev: read as twocol, but --decode-html apply to plain text"):
        prepare([src], tmp_path / "d", text_opts=TextOptions(html=True))
    with pytest.raises(PunctkitError, match=r"^--drop-lines '\(Translator': not a regular expression"):
        line_pattern("(Translator")


def test_a_file_of_notes_only_is_reported_not_dropped_silently(tmp_path):
    from punctkit.data.formats.text import TextOptions
    empty = published(tmp_path, "e.md", "(Applause)\n(Music)\n")
    full = published(tmp_path, "f.md", "Hello there.\n")
    rep = prepare([empty, full], tmp_path / "d", fmt="text", text_opts=TextOptions(notes=True, one_stream=True))
    assert rep.repairs["input without any word skipped"] == 1
    assert f"e.g. {empty}\n" in (tmp_path / "d" / "prepare.log").read_text()


def test_marks_only_labels_read_into_a_true_case_inventory(tmp_path):
    src = tmp_path / "dev"
    src.write_text("so\tCOMMA\nnasa\tO\nIBM\tO\nsaid\tQUESTION\n")
    prepare([src], tmp_path / "d", inventory="truecase4")
    u = read_data_dir(tmp_path / "d").utterances[0]
    assert (u.words, u.labels) == (["so", "nasa", "IBM", "said"], ["L_COMMA", "L_O", "U_O", "L_QUESTION"])
    rows = {r[0]: r[1] for r in stats(read_data_dir(tmp_path / "d").utterances, INVENTORIES["truecase4"])}
    assert (rows["case L (lower)"], rows["case U (upper)"], rows["case C (capital)"]) == (3, 1, 0)
    src.write_text("wow\tEXCLAMATION\n")
    with pytest.raises(PunctkitError, match="dev: its labels hold EXCLAMATION, which inventory truecase4 lacks"):
        prepare([src], tmp_path / "e", inventory="truecase4")


def test_cli_prepare_reads_a_file_list_with_the_repair_options(tmp_path):
    import subprocess
    import sys

    talk = published(tmp_path)
    lst = tmp_path / "talks.scp"
    lst.write_text(f"Ben_Jerrys {talk}\n")
    base = [sys.executable, "-m", "punctkit.cli", "prepare", "--file-list", str(lst), "--from", "text",
            "--inventory", "truecase4", "--one-stream", "--block-len", "4", "--decode-html", "--drop-notes",
            "--split-contractions"]
    r = subprocess.run(base + ["-o", str(tmp_path / "d"), "--drop-lines", "(Translator|Reviewer):"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "contraction split (--split-contractions): 3" in r.stdout
    text = read_table(tmp_path / "d" / "text")
    assert list(text)[:2] == ["Ben_Jerrys-000001", "Ben_Jerrys-000002"]
    assert text["Ben_Jerrys-000001"] == "I've noticed something and"
    bad = subprocess.run(base + ["-o", str(tmp_path / "e"), "--drop-lines", "(Translator"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "not a regular expression" in bad.stderr


# ---------------------------------------------------------------- a transcript's speaker turns and times

CALLS = Path(__file__).resolve().parents[3] / "shared" / "data" / "earnings22" / "calls"
NLP_HEADER = "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags"


def nlp_rows(path: Path) -> list[dict[str, str]]:
    rows = path.read_text(encoding="utf-8").splitlines()
    cols = rows[0].split("|")
    return [dict(zip(cols, r.split("|"))) for r in rows[1:] if r.strip()]


def call_head(dst: Path, name: str, lines: int) -> Path:
    """The first `lines` lines of an Earnings-22 call, as an NLP file of its own."""
    src = CALLS / name
    if not src.is_file():
        pytest.skip(f"Earnings-22 calls not found at {CALLS}")
    dst.write_text("\n".join(src.read_text(encoding="utf-8").splitlines()[:lines]) + "\n", encoding="utf-8")
    return dst


def test_prepare_of_a_call_writes_its_turns_segments_and_ctm(tmp_path):
    """A real call (Rev NLP: speakers, ts/endTs) prepared: an utterance a speaker turn, or a stretch of one whose
    words all have times or none has (`<doc>-<n:05d>`, in time order), utt2spk its speaker prefixed by the
    document (consecutive utterances of one speaker: the turns), segments from a timed stretch's first word's start
    to its last word's end, and a ctm (from the segment's start) that gives back every timed word's times, so the
    pauses inside a turn timed in part are kept; the words and labels are the call's as one utterance."""
    from punctkit.data.timing import read_timing

    call = CALLS / "4351517.aligned.nlp"
    if not call.is_file():
        pytest.skip(f"Earnings-22 calls not found at {CALLS}")
    d = tmp_path / "call"
    prepare([call], d, inventory="truecase4", show_progress=False)
    dd = read_data_dir(d)
    ids = [u.uttid for u in dd.utterances]
    assert ids == [f"call-{k:05d}" for k in range(1, len(ids) + 1)] and len(ids) > 20
    rows = [r for r in nlp_rows(call) if r["token"].strip() and not r["token"].strip().startswith("<")]
    speakers = [r["speaker"] for r in rows]
    runs = [s for k, s in enumerate(speakers) if k == 0 or s != speakers[k - 1]]
    spk = [dd.utt2spk[u] for u in ids]
    assert [s for k, s in enumerate(spk) if k == 0 or s != spk[k - 1]] == [f"call-{s}" for s in runs]
    # the words and labels are those of the call read as one utterance
    (one,), _ = read(call, inventory="truecase4")
    assert [w for u in dd.utterances for w in u.words] == one.words
    assert [lab for u in dd.utterances for lab in u.labels] == one.labels
    timing = read_timing(dd)
    assert timing.known and 0 < len(timing.spans) < len(ids)  # this call has turns without times
    assert set(read_table(d / "utt2reco").values()) == {"call"}
    timed = [(float(r["ts"]), float(r["endTs"])) for r in rows if r["ts"].strip() and r["endTs"].strip()]
    starts = {round(a, 6) for a, _ in timed}
    for uttid, span in timing.spans.items():
        assert span.recording == "call" and span.start in starts and span.end > span.start
    assert timing.words and all(round(a, 6) in starts for ws in timing.words.values() for a, _ in ws)
    assert sum(len(ws) for ws in timing.words.values()) == len(timed)  # every timed word keeps its times
    spans = [timing.spans[u] for u in ids if u in timing.spans]
    assert [s.start for s in spans] == sorted(s.start for s in spans)  # ids sort in time order


def test_decode_of_a_prepared_call_labels_it_as_punctuate_of_the_call(tmp_path):
    """The head of a real call prepared to a data directory (its turns, segments and ctm) and decoded with the
    shipped model labels every word as punctuate of the NLP file does; `punctuate DIR/text` reads the turns and
    pauses as decode does (the same labels again); and without them (the same text, a speaker an utterance, no
    segments or ctm) the labels differ: they reach the model."""
    nlp = call_head(tmp_path / "head.nlp", "4470684.aligned.nlp", 1500)
    d = tmp_path / "head"
    cli("prepare", nlp, "-o", d, "--inventory", "truecase4", "-q")
    assert (d / "segments").is_file() and (d / "ctm").is_file() and len(read_table(d / "segments")) >= 3
    decoded, _ = decode_reads_its_turns(d, nlp, tmp_path)
    cli("punctuate", d / "text", "-m", "fast", "--format", "twocol", "-o", tmp_path / "t.tsv", "-q")
    assert twocol_marks(tmp_path / "t.tsv") == decoded


def test_turns_without_times_give_utt2reco_and_one_stream(tmp_path):
    """An NLP file with speakers but no times: an utterance a turn, utt2reco naming the document, no segments or
    ctm; its turns are one stream (make_streams: by recording, in id order, each one's speaker)."""
    from punctkit.data.streams import make_streams

    nlp = tmp_path / "talk.nlp"
    words = [("Hello", "A", ","), ("there", "A", "."), ("Hi", "B", "."), ("How", "A", ""), ("are", "A", ""),
             ("you", "A", "?")]
    nlp.write_text("\n".join([NLP_HEADER] + [f"{w}|{s}|||{p}||UC|[]" for w, s, p in words]) + "\n")
    d = tmp_path / "d"
    prepare([nlp], d, inventory="truecase4", show_progress=False)
    assert not (d / "segments").exists() and not (d / "ctm").exists()
    assert read_table(d / "utt2reco") == {"d-00001": "d", "d-00002": "d", "d-00003": "d"}
    assert read_table(d / "utt2spk") == {"d-00001": "d-A", "d-00002": "d-B", "d-00003": "d-A"}
    dd = read_data_dir(d)
    assert [u.labels for u in dd.utterances] == [["C_COMMA", "L_PERIOD"], ["C_PERIOD"], ["C_O", "L_O", "L_QUESTION"]]
    (s,) = make_streams(dd)
    assert s.key == "d" and s.uttids == ["d-00001", "d-00002", "d-00003"] and s.speakers == ["d-A", "d-B", "d-A"]
    assert s.words == ["Hello", "there", "Hi", "How", "are", "you"]


def test_speakers_of_two_documents_differ_and_a_plain_text_dir_is_unchanged(tmp_path):
    """Two calls with the same speaker labels: each one's speakers are prefixed by its document, so they differ;
    a text input (no speakers, no times) is written as ever: no segments, ctm or utt2reco."""
    a, b = tmp_path / "a.nlp", tmp_path / "b.nlp"
    for p in (a, b):
        p.write_text(f"{NLP_HEADER}\nyes|0|0.5|0.9|.|||[]\nno|1|1.5|1.8|.|||[]\n")
    d = tmp_path / "two"
    prepare([a, b], d, show_progress=False)
    assert read_table(d / "utt2spk") == {"two-001-00001": "two-001-0", "two-001-00002": "two-001-1",
                                         "two-002-00001": "two-002-0", "two-002-00002": "two-002-1"}
    assert read_table(d / "segments")["two-002-00002"] == "two-002 1.5 1.8"
    assert (d / "ctm").read_text().splitlines()[:2] == ["two-001-00001 1 0 0.4 yes", "two-001-00002 1 0 0.3 no"]
    txt = tmp_path / "t.txt"
    txt.write_text("Hello there. How are you?\nFine.\n")
    prepare([txt], tmp_path / "plain", show_progress=False)
    assert sorted(f.name for f in (tmp_path / "plain").iterdir()) == [
        "inventory", "labels", "prepare.log", "spk2utt", "text", "utt2spk"]
    assert read_table(tmp_path / "plain" / "utt2spk") == {u: u for u in ("plain-t.txt-000001", "plain-t.txt-000002")}


def test_convert_of_a_call_to_a_data_dir_keeps_its_turns(tmp_path):
    nlp = tmp_path / "c.nlp"
    nlp.write_text(f"{NLP_HEADER}\nyes|0|0.5|0.9|.|||[]\nno|1|1.5|1.8|.|||[]\nok|1|||.|||[]\n")
    cli("convert", nlp, tmp_path / "d", "--to", "datadir")
    # speaker 1's turn `no ok` is cut where its times stop: `no` keeps its segment, `ok` (no time) has none
    assert read_table(tmp_path / "d" / "utt2spk") == {"c.nlp-00001": "c.nlp-0", "c.nlp-00002": "c.nlp-1",
                                                      "c.nlp-00003": "c.nlp-1"}
    assert read_table(tmp_path / "d" / "segments") == {"c.nlp-00001": "c.nlp 0.5 0.9", "c.nlp-00002": "c.nlp 1.5 1.8"}
    assert read_table(tmp_path / "d" / "utt2reco") == {f"c.nlp-0000{k}": "c.nlp" for k in (1, 2, 3)}


def test_punctuate_of_a_dir_text_reads_a_recordings_turns_in_time_order_as_decode(tmp_path):
    """A hand-made directory whose ids are not in time order (segments place b-1 between a-1 and a-2):
    `punctuate DIR/text` gives its utterances in decode's order (a recording's in time order) with decode's labels;
    split-data keeps utt2reco with the utterances of each part."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "text").write_text("a-1 yeah i know\na-2 i think so we went there\nb-1 okay so what do you think\n")
    (d / "utt2spk").write_text("a-1 a\na-2 a\nb-1 b\n")
    (d / "segments").write_text("a-1 r 0.0 0.9\nb-1 r 3.0 4.2\n")
    (d / "utt2reco").write_text("a-1 r\na-2 r\nb-1 r\n")  # a-2 has no segment: the recording in id order
    cli("decode", "fast", d, tmp_path / "d.txt", "--format", "kaldi_text", "-q")
    cli("punctuate", d / "text", "-m", "fast", "--format", "kaldi_text", "-o", tmp_path / "p.txt", "-q")
    decoded = (tmp_path / "d.txt").read_text().splitlines()
    assert (tmp_path / "p.txt").read_text().splitlines() == decoded
    assert [ln.split()[0] for ln in decoded] == ["a-1", "a-2", "b-1"]
    (d / "utt2reco").unlink()
    (d / "segments").write_text("a-1 r 0.0 0.9\na-2 r 6.0 7.0\nb-1 r 3.0 4.2\n")
    cli("decode", "fast", d, tmp_path / "e.txt", "--format", "kaldi_text", "-q")
    cli("punctuate", d / "text", "-m", "fast", "--format", "kaldi_text", "-o", tmp_path / "q.txt", "-q")
    timed = (tmp_path / "q.txt").read_text().splitlines()
    assert sorted(timed) == (tmp_path / "e.txt").read_text().splitlines()  # decode's: sorted by id
    assert [ln.split()[0] for ln in timed] == ["a-1", "b-1", "a-2"]  # punctuate's: the stream's, in time order
    (d / "utt2reco").write_text("a-1 r\na-2 r\nb-1 r\n")
    cli("split-data", d, "2")
    assert read_table(d / "split2" / "1" / "utt2reco") == {"a-1": "r", "a-2": "r"}
