import pytest

from punctkit.data.datadir import read_data_dir, read_table
from punctkit.data.formats import Utterance
from punctkit.data.prepare import parse_chunk_spec, prepare, rechunk, stats
from punctkit.data.labels import INVENTORIES
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
