"""A file punctkit replaces keeps its permissions, as editors do (issue 56, kind 2): a private 0600
transcript stays 0600 when punctuate writes over its own output or over the user's file with
--overwrite, and so does every other atomic output (convert, data directories, feature archives,
binary files such as packages). A new file gets the umask's default."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from punctkit.files import atomic_write, output_dir, write_lines, written_by_punctkit


def mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.fixture(autouse=True)
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.parametrize("kind", ["w", "wb"])
def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path, kind):
    p = tmp_path / "out"
    with atomic_write(p, kind) as f:
        f.write(b"one" if "b" in kind else "one")
    assert mode(p) == 0o644  # new: 0666 less the umask
    for m in (0o600, 0o640, 0o604, 0o755, 0o400):
        os.chmod(p, m)
        with atomic_write(p, kind) as f:
            f.write(b"two" if "b" in kind else "two")
        assert mode(p) == m, oct(m)
        assert p.read_bytes() == b"two" and written_by_punctkit(p)


def test_a_new_file_gets_the_umask_default(tmp_path):
    os.umask(0o077)
    write_lines(tmp_path / "a", ["x"])
    assert mode(tmp_path / "a") == 0o600
    os.umask(0o002)
    write_lines(tmp_path / "b", ["x"])
    assert mode(tmp_path / "b") == 0o664


def test_a_failed_write_leaves_the_file_and_its_mode(tmp_path):
    p = tmp_path / "out"
    p.write_text("old")
    os.chmod(p, 0o600)
    with pytest.raises(RuntimeError):
        with atomic_write(p) as f:
            f.write("new")
            raise RuntimeError("killed")
    assert p.read_text() == "old" and mode(p) == 0o600
    assert [e.name for e in tmp_path.iterdir()] == ["out"]


def test_replacing_keeps_the_group_where_allowed(tmp_path):
    groups = [g for g in os.getgroups() if g != os.getegid()] or ([1] if os.geteuid() == 0 else [])
    if not groups:
        pytest.skip("this user belongs to one group only")
    p = tmp_path / "out"
    write_lines(p, ["a"])
    os.chown(p, -1, groups[0])
    os.chmod(p, 0o640)
    write_lines(p, ["b"])
    assert os.stat(p).st_gid == groups[0] and mode(p) == 0o640


def test_punctuate_rerun_and_overwrite_keep_a_private_output_private(tmp_path):
    from punctkit.punctuator import punctuate_file
    from words_pass_through_util import FakeModel

    src = tmp_path / "in.txt"
    src.write_text("so what do you think\nwe ran 10\u00a0km today\n")
    out = tmp_path / "out.txt"
    punctuate_file(FakeModel("4class"), src, out)
    assert mode(out) == 0o644  # a new output: the umask's default
    os.chmod(out, 0o600)
    punctuate_file(FakeModel("4class"), src, out)  # a rerun over its own output
    assert mode(out) == 0o600
    mine = tmp_path / "mine.txt"
    mine.write_text("the user's\n")
    os.chmod(mine, 0o640)
    punctuate_file(FakeModel("4class"), src, mine, overwrite=True)
    assert mode(mine) == 0o640 and mine.read_text() != "the user's\n"
    for fmt in ("twocol", "jsonl", "text"):  # emit writers and corpus writers alike
        o = tmp_path / f"out.{fmt}"
        punctuate_file(FakeModel("4class"), src, o, fmt=fmt)
        os.chmod(o, 0o600)
        punctuate_file(FakeModel("4class"), src, o, fmt=fmt)
        assert mode(o) == 0o600, fmt


def test_data_directory_files_keep_their_modes(tmp_path):
    from punctkit.data.datadir import write_data_dir
    from punctkit.data.labels import get_inventory
    from punctkit.data.utterance import Utterance

    inv = get_inventory("4class")
    d = tmp_path / "data"
    write_data_dir(d, [Utterance("u1", ["so", "what"], ["O", "QUESTION"])], inv)
    assert mode(d / "text") == 0o644
    os.chmod(d / "text", 0o600)
    os.chmod(d / "labels", 0o640)
    write_data_dir(d, [Utterance("u1", ["so", "why"], ["O", "QUESTION"])], inv)
    assert mode(d / "text") == 0o600 and mode(d / "labels") == 0o640 and mode(d / "utt2spk") == 0o644
    with output_dir(d, ["extra"], add=True) as o:
        o.write_lines("extra", ["x"])
    os.chmod(d / "extra", 0o600)
    with output_dir(d, ["extra"], add=True) as o:
        o.write_bytes("extra", b"y\n")
    assert mode(d / "extra") == 0o600


def test_convert_keeps_the_mode(tmp_path):
    from punctkit.data.formats import convert

    src = tmp_path / "in.txt"
    src.write_text("So, what do you think?\n")
    dst = tmp_path / "out.tsv"
    convert(src, dst, "text", "twocol")
    os.chmod(dst, 0o600)
    convert(src, dst, "text", "twocol")
    assert mode(dst) == 0o600


def test_feature_archives_keep_their_modes(tmp_path):
    from punctkit.feats.ark import ArkWriter

    ark, scp = tmp_path / "feats.ark", tmp_path / "feats.scp"
    with ArkWriter(ark, scp) as w:
        w.write("u1", np.zeros((2, 3), dtype=np.float32))
    assert mode(ark) == 0o644 and mode(scp) == 0o644
    os.chmod(ark, 0o600)
    os.chmod(scp, 0o600)
    with ArkWriter(ark, scp) as w:
        w.write("u1", np.ones((2, 3), dtype=np.float32))
    assert mode(ark) == 0o600 and mode(scp) == 0o600
