"""Splitting a data directory into parts and combining them back (punctkit.data.datadir)."""
from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from punctkit.data.datadir import combine_data_dirs, read_data_dir, read_table, split_balanced, split_data_dir
from punctkit.data.prepare import prepare
from punctkit.files import PunctkitError


def same_tree(a: Path, b: Path) -> None:
    """Assert two directories hold the same files with the same bytes (splitN/ left aside)."""
    names_a = sorted(p.name for p in a.iterdir() if p.is_file())
    names_b = sorted(p.name for p in b.iterdir() if p.is_file())
    assert names_a == names_b
    for n in names_a:
        assert filecmp.cmp(a / n, b / n, shallow=False), f"{n} differs"


def keys(path: Path) -> list[str]:
    return [ln.split()[0] for ln in path.read_text().splitlines()]


@given(st.integers(0, 60), st.integers(1, 12))
def test_split_balanced_unit_sizes_follow_kaldi_split_scp(n_items, n):
    """One split for data dirs and feature jobs; with unit sizes, split_scp.pl's part sizes."""
    groups = split_balanced([1] * n_items, n)
    k, r = divmod(n_items, n)
    assert [len(g) for g in groups] == [k + 1] * r + [k] * (n - r)
    assert [i for g in groups for i in g] == list(range(n_items))


@given(st.lists(st.integers(1, 20), min_size=1, max_size=30), st.data())
def test_split_balanced_weighted_groups_are_contiguous_nonempty_and_near_even(sizes, data):
    """Speaker units: no empty part, order kept, no part above its share by more than one unit."""
    n = data.draw(st.integers(1, len(sizes)))
    groups = split_balanced(sizes, n)
    assert len(groups) == n and all(groups)
    assert [i for g in groups for i in g] == list(range(len(sizes)))
    for g in groups:
        assert sum(sizes[i] for i in g) <= -(-sum(sizes) // n) + max(sizes)


@pytest.fixture
def audio_dir(tmp_path: Path) -> Path:
    """A small audio-style data dir: 3 recordings, 4 speakers, 7 segments, a ctm."""
    d = tmp_path / "audio"
    d.mkdir()
    segs = [("A-s1-0001", "recA", "spkA", "hello there friend", "O COMMA PERIOD"),
            ("A-s1-0002", "recA", "spkA", "how are you", "O O QUESTION"),
            ("B-s2-0001", "recB", "spkB", "fine thanks", "COMMA PERIOD"),
            ("B-s2-0002", "recB", "spkB", "and you", "O QUESTION"),
            ("B-s3-0001", "recB", "spkC", "good", "PERIOD"),
            ("C-s4-0001", "recC", "spkD", "bye now", "O PERIOD"),
            ("C-s4-0002", "recC", "spkD", "see you soon", "O O PERIOD")]
    w = lambda name, lines: (d / name).write_text("".join(ln + "\n" for ln in lines))
    w("text", [f"{u} {t}" for u, _, _, t, _ in segs])
    w("labels", [f"{u} {lab}" for u, _, _, _, lab in segs])
    w("utt2spk", [f"{u} {s}" for u, _, s, _, _ in segs])
    spk2utt: dict[str, list[str]] = {}
    for u, _, s, _, _ in segs:
        spk2utt.setdefault(s, []).append(u)
    w("spk2utt", [f"{s} {' '.join(us)}" for s, us in sorted(spk2utt.items())])
    w("segments", [f"{u} {r} {i * 2.0:.2f} {i * 2.0 + 1.5:.2f}" for i, (u, r, _, _, _) in enumerate(segs)])
    w("wav.scp", ["recA sox a.flac -t wav - |", "recB /data/b.wav", "recC /data/c.wav"])
    w("reco2dur", ["recA 4.10", "recB 10.00", "recC 14.20"])
    ctm = []
    for u, _, _, t, _ in segs:
        ctm += [f"{u} 1 {0.3 * j:.2f} 0.25 {word} 0.9" for j, word in enumerate(t.split())]
    w("ctm", ctm)
    w("feats.scp", [f"{u} feats.ark:{100 * i + 9}" for i, (u, *_) in enumerate(segs)])
    w("utt2num_frames", [f"{u} {150 + i}" for i, (u, *_) in enumerate(segs)])
    w("cmvn.scp", [f"{s} cmvn.ark:{i * 40 + 5}" for i, s in enumerate(sorted(spk2utt))])
    w("inventory", ["4class"])
    return d


def test_audio_dir_split_keeps_files_consistent(audio_dir):
    parts = split_data_dir(audio_dir, 3)
    assert parts == [audio_dir / "split3" / str(k) for k in (1, 2, 3)]
    all_utts = []
    for p in parts:
        utts = keys(p / "text")
        all_utts += utts
        assert 2 <= len(utts) <= 3  # balanced: 7 utterances into 3 parts
        for name in ("labels", "utt2spk", "segments", "feats.scp", "utt2num_frames"):
            assert keys(p / name) == utts, name
        assert sorted(set(keys(p / "ctm"))) == utts
        recos = sorted({ln.split()[1] for ln in (p / "segments").read_text().splitlines()})
        assert keys(p / "wav.scp") == recos and keys(p / "reco2dur") == recos
        utt2spk = read_table(p / "utt2spk")
        spk2utt = read_table(p / "spk2utt", check_sorted=True)
        assert {u for us in spk2utt.values() for u in us.split()} == set(utts)
        assert all(utt2spk[u] == s for s, us in spk2utt.items() for u in us.split())
        assert keys(p / "cmvn.scp") == sorted(spk2utt)
        assert (p / "inventory").read_text() == "4class\n"
        read_data_dir(p)  # text and labels still agree
    assert all_utts == keys(audio_dir / "text")  # contiguous, in order


def test_audio_dir_split_combine_is_identity(audio_dir, tmp_path):
    for n, per_spk in ((2, False), (3, True), (7, False)):
        parts = split_data_dir(audio_dir, n, per_spk=per_spk)
        combine_data_dirs(tmp_path / f"back{n}", parts)
        same_tree(audio_dir, tmp_path / f"back{n}")


def test_per_spk_keeps_speakers_whole(audio_dir):
    parts = split_data_dir(audio_dir, 3, per_spk=True)
    seen: dict[str, int] = {}
    for k, p in enumerate(parts):
        for ln in (p / "utt2spk").read_text().splitlines():
            spk = ln.split()[1]
            assert seen.setdefault(spk, k) == k, f"speaker {spk} in two parts"
    assert len(seen) == 4
    with pytest.raises(PunctkitError, match="cannot split 4 speakers into 5 parts"):
        split_data_dir(audio_dir, 5, per_spk=True)


def test_real_iwslt_dir_round_trip(iwslt, tmp_path):
    dev, test = tmp_path / "dev", tmp_path / "test"
    prepare([iwslt / "dev2012"], dev, block_len=100, lines=(1, 30000))
    prepare([iwslt / "test2011"], test, block_len=100)
    for n in (1, 4):
        combine_data_dirs(tmp_path / f"dev{n}", split_data_dir(dev, n))
        same_tree(dev, tmp_path / f"dev{n}")
    # two streams: one per speaker; the split by speaker keeps each stream whole
    both = tmp_path / "both"
    warnings = combine_data_dirs(both, [dev, test])
    assert warnings == ["'prepare.log' left out: it differs between the inputs"]
    parts = split_data_dir(both, 2, per_spk=True)
    assert [len(set(read_table(p / "utt2spk").values())) for p in parts] == [1, 1]
    combine_data_dirs(tmp_path / "both2", parts)
    same_tree(both, tmp_path / "both2")


def test_bad_inputs_name_file_and_line(audio_dir, tmp_path):
    with open(audio_dir / "ctm", "a") as f:
        f.write("Z-unknown 1 0.00 0.10 word 1.0\n")
    n = len((audio_dir / "ctm").read_text().splitlines())
    with pytest.raises(PunctkitError, match=rf"ctm:{n}: unknown utterance 'Z-unknown'"):
        split_data_dir(audio_dir, 2)
    with pytest.raises(PunctkitError, match="cannot split 7 utterances into 8 parts"):
        (audio_dir / "ctm").unlink()
        split_data_dir(audio_dir, 8)
    parts = split_data_dir(audio_dir, 2)
    with pytest.raises(PunctkitError, match="utterance 'A-s1-0001' is in both"):
        combine_data_dirs(tmp_path / "dup", [parts[0], parts[0]])
    (parts[1] / "inventory").write_text("6class\n")
    with pytest.raises(PunctkitError, match="'inventory' differs"):
        combine_data_dirs(tmp_path / "inv", parts)
    assert not (tmp_path / "inv").exists()  # nothing half-written


def test_cli_split_and_combine(audio_dir, tmp_path):
    pk = [sys.executable, "-m", "punctkit.cli"]
    r = subprocess.run(pk + ["split-data", str(audio_dir), "2", "--per-spk"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    parts = [str(audio_dir / "split2" / k) for k in ("1", "2")]
    r = subprocess.run(pk + ["combine-data", str(tmp_path / "out")] + parts, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    same_tree(audio_dir, tmp_path / "out")
    r = subprocess.run(pk + ["split-data", str(tmp_path / "nope"), "2"], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip() == f"punctkit: error: data directory not found: {tmp_path / 'nope'}"


def test_global_cmvn_is_copied_whole_into_every_part(audio_dir, tmp_path):
    # compute-cmvn without --per-spk: one key, "global", that names no speaker
    (audio_dir / "cmvn.scp").write_text("global /exp/data/cmvn.ark:7\n")
    parts = split_data_dir(audio_dir, 3, per_spk=True)
    for p in parts:
        assert (p / "cmvn.scp").read_bytes() == (audio_dir / "cmvn.scp").read_bytes()
    combine_data_dirs(tmp_path / "back", parts)
    same_tree(audio_dir, tmp_path / "back")
    # a speaker named "global" keeps the file keyed by speaker
    (audio_dir / "utt2spk").write_text((audio_dir / "utt2spk").read_text().replace("spkA", "global"))
    (audio_dir / "spk2utt").write_text("".join(sorted((audio_dir / "spk2utt").read_text()
                                                      .replace("spkA", "global").splitlines(True))))
    parts = split_data_dir(audio_dir, 3, per_spk=True)
    assert [keys(p / "cmvn.scp") for p in parts] == [["global"], [], []]


def test_combine_leaves_out_cmvn_global_in_some_per_speaker_in_others(audio_dir, tmp_path):
    parts = split_data_dir(audio_dir, 2, per_spk=True)
    (parts[0] / "cmvn.scp").write_text("global /exp/data/cmvn.ark:7\n")
    warnings = combine_data_dirs(tmp_path / "mixed", parts)
    assert warnings == ["'cmvn.scp' left out: global in some inputs, keyed by speaker in others"]
    assert not (tmp_path / "mixed" / "cmvn.scp").exists()


def test_case_unknown_goes_with_its_utterances(iwslt, tmp_path):
    """A cased reference's `case_unknown` (sparse: only utterances with such words) is split per
    utterance and combined back whole."""
    ref = tmp_path / "ref"
    prepare([iwslt / "test2011"], ref, inventory="truecase4", block_len=100)
    ids = sorted(read_table(ref / "text"))
    (ref / "case_unknown").write_text(f"{ids[1]} 0 5\n{ids[-1]} 3\n")
    parts = split_data_dir(ref, 3)
    held = [(p / "case_unknown").read_text() if (p / "case_unknown").exists() else "" for p in parts]
    assert "".join(held) == (ref / "case_unknown").read_text() and held[1] == ""
    for p, text in zip(parts, held):
        assert all(line.split()[0] in read_table(p / "text") for line in text.splitlines())
    combine_data_dirs(tmp_path / "back", parts)
    same_tree(ref, tmp_path / "back")


def test_combine_of_a_text_dir_and_a_dir_of_turns_reads_each_part_as_alone(tmp_path):
    """combine-data of a text directory (streams by utt2spk) and one of speaker turns (a Rev NLP call with times:
    segments, ctm, utt2reco) keeps segments and ctm where they are and gives every utterance its utt2reco line (the
    text directory's: its utt2spk), so the combination's streams, speakers and word times are the parts' own."""
    from punctkit.data.streams import make_streams
    from punctkit.data.timing import read_timing

    txt = tmp_path / "talk.txt"
    txt.write_text("Hello there. How are you today?\nFine, thanks. And you?\n")
    nlp = tmp_path / "call.nlp"
    nlp.write_text("token|speaker|ts|endTs|punctuation|prepunctuation|case|tags\n"
                   "yes|0|0.5|0.9|.|||[]\nno|1|1.5|1.8|,|||[]\nreally|1|2.0|2.4|?|||[]\nok|0|||.|||[]\n")
    prepare([txt], tmp_path / "text", show_progress=False)
    prepare([nlp], tmp_path / "turns", show_progress=False)
    combine_data_dirs(tmp_path / "both", [tmp_path / "text", tmp_path / "turns"])
    both = tmp_path / "both"
    assert read_table(both / "segments") == read_table(tmp_path / "turns" / "segments")
    assert (both / "ctm").read_text() == (tmp_path / "turns" / "ctm").read_text()
    spk = read_table(tmp_path / "text" / "utt2spk")
    assert read_table(both / "utt2reco") == {**spk, **read_table(tmp_path / "turns" / "utt2reco")}

    def streams(d):
        dd = read_data_dir(d)
        timing = read_timing(dd)
        return {s.key: (s.words, s.speakers, s.times) for s in make_streams(dd, None, timing if timing.known else None)}

    text = {k: (w, None, None) for k, (w, _, _) in streams(tmp_path / "text").items()}
    alone = {**streams(tmp_path / "turns"), **text}
    got = streams(both)
    assert got.keys() == alone.keys() and len(text) == 2
    for key, (words, speakers, times) in alone.items():
        assert got[key][0] == words
        if speakers is not None:  # the call: its turns and word times as alone
            assert got[key][1] == speakers and got[key][2] == times


def test_combine_of_timed_and_untimed_turns_keeps_the_segments(tmp_path):
    """Two directories of turns, one with times (segments, ctm, utt2reco) and one without (utt2reco only): the
    combination keeps the first one's segments and ctm (not left out because the second has none)."""
    head = "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags\n"
    (tmp_path / "a.nlp").write_text(head + "yes|0|0.5|0.9|.|||[]\nno|1|1.5|1.8|.|||[]\n")
    (tmp_path / "b.nlp").write_text(head + "well|0|||,|||[]\nright|1|||.|||[]\n")
    prepare([tmp_path / "a.nlp"], tmp_path / "a", show_progress=False)
    prepare([tmp_path / "b.nlp"], tmp_path / "b", show_progress=False)
    assert not (tmp_path / "b" / "segments").exists()
    combine_data_dirs(tmp_path / "ab", [tmp_path / "a", tmp_path / "b"])
    assert read_table(tmp_path / "ab" / "segments") == read_table(tmp_path / "a" / "segments")
    assert (tmp_path / "ab" / "ctm").read_text() == (tmp_path / "a" / "ctm").read_text()
    assert len(read_table(tmp_path / "ab" / "utt2reco")) == 4


CALLS = Path(__file__).resolve().parents[3] / "shared" / "data" / "earnings22" / "calls"


@pytest.fixture(scope="module")
def calls_dir(tmp_path_factory) -> Path:
    """Three Earnings-22 calls prepared as decode reads a conversation: an utterance a speaker turn, `utt2spk` its
    speaker (several a call), `segments` and `utt2reco` its call."""
    names = ("4474955", "4475604", "4482968")
    if not all((CALLS / f"{x}.aligned.nlp").is_file() for x in names):
        pytest.skip(f"Earnings-22 calls not found at {CALLS}")
    d = tmp_path_factory.mktemp("calls") / "calls"
    prepare([CALLS / f"{x}.aligned.nlp" for x in names], d, inventory="truecase4", show_progress=False)
    return d


def parts_of(parts: list[Path], name: str) -> list[set[str]]:
    """The values (second column) of file `name` in each part."""
    return [{ln.split()[1] for ln in (p / name).read_text().splitlines()} for p in parts]


def test_per_reco_keeps_each_conversation_in_one_part(calls_dir):
    """--per-reco (Kaldi's split_data.sh --per-reco): a call's speaker turns stay together, so decode reads each
    call as one stream in its part; --per-spk would share a call's speakers out among parts."""
    recos = parts_of(split_data_dir(calls_dir, 2, per_reco=True), "utt2reco")
    assert sorted(len(r) for r in recos) == [1, 2] and not recos[0] & recos[1]
    spk_recos = parts_of(split_data_dir(calls_dir, 2, per_spk=True, overwrite=True), "utt2reco")
    assert spk_recos[0] & spk_recos[1]  # what --per-spk does to a conversation: one call in both parts
    with pytest.raises(PunctkitError, match="cannot split 3 recordings into 4 parts"):
        split_data_dir(calls_dir, 4, per_reco=True)
    with pytest.raises(PunctkitError, match="--per-spk or --per-reco, not both"):
        split_data_dir(calls_dir, 2, per_spk=True, per_reco=True)


def test_per_reco_without_recordings_is_per_speaker(audio_dir, tmp_path):
    """A directory that names no recording for some utterance: those go by their speaker (a document), as decode
    reads them; split then combine gives the directory back."""
    text = tmp_path / "text_only"
    text.mkdir()
    for name in ("text", "labels", "utt2spk", "spk2utt", "inventory"):
        (text / name).write_bytes((audio_dir / name).read_bytes())
    parts = split_data_dir(text, 4, per_reco=True)
    assert [len(s) for s in parts_of(parts, "utt2spk")] == [1, 1, 1, 1]
    combine_data_dirs(tmp_path / "back", parts)
    same_tree(text, tmp_path / "back")
