import pytest

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import INVENTORIES
from punctkit.files import PunctkitError


def make(tmp_path, text, labels):
    d = tmp_path / "d"
    d.mkdir()
    (d / "text").write_text(text)
    (d / "labels").write_text(labels)
    return d


def test_length_mismatch_names_file_line_and_utterance(tmp_path):
    d = make(tmp_path, "u1 a b\nu2 c d\n", "u1 O O\nu2 O\n")
    with pytest.raises(PunctkitError, match=r"labels:2 \(utterance u2\): 1 labels for 2 words"):
        read_data_dir(d)


def test_unknown_label_and_inventory(tmp_path):
    d = make(tmp_path, "u1 a b\n", "u1 O EXCLAMATION\n")
    assert read_data_dir(d).inventory.name == "6class"
    (d / "inventory").write_text("4class\n")
    with pytest.raises(PunctkitError, match=r"labels:1 \(utterance u1\): unknown label 'EXCLAMATION'"):
        read_data_dir(d)


def test_unsorted_and_missing(tmp_path):
    d = make(tmp_path, "u2 a\nu1 b\n", "u1 O\nu2 O\n")
    with pytest.raises(PunctkitError, match=r"text:2: not sorted"):
        read_data_dir(d)
    with pytest.raises(PunctkitError, match="data directory not found"):
        read_data_dir(tmp_path / "nope")
    (tmp_path / "x").mkdir()
    d2 = make(tmp_path / "x", "u1 a\n", "u2 O\n")
    with pytest.raises(PunctkitError, match="no line for utterance 'u1'"):
        read_data_dir(d2)


def test_write_is_sorted_and_atomic(tmp_path):
    utts = [Utterance("b", ["x"], ["O"]), Utterance("a", ["y"], ["PERIOD"])]
    write_data_dir(tmp_path / "d", utts, INVENTORIES["4class"])
    assert (tmp_path / "d" / "text").read_text() == "a y\nb x\n"
    with pytest.raises(PunctkitError, match="duplicate utterance id 'a'"):
        write_data_dir(tmp_path / "d", utts + [Utterance("a", ["z"], ["O"])], INVENTORIES["4class"])
    assert (tmp_path / "d" / "text").read_text() == "a y\nb x\n"  # the old dir is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
