"""Outputs never delete what punctkit did not write; no output replaces an input."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from punct_util import cli, cli_error, tiny_conf, train_tiny
from punctkit.data.datadir import combine_data_dirs, read_data_dir, split_data_dir, write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import get_inventory
from punctkit.files import PunctkitError

BAD = Path(__file__).parents[1] / "bad_inputs" / "outputs"
TINY = tiny_conf({"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32,
                  "dropout": 0.1}, epochs=1)


def marks_files(d: Path) -> bool:
    """Whether the file system of `d` keeps the mark of punctkit's files (files.outputs._mark_ours: nanosecond
    modification times, or user attributes)."""
    from punctkit.files import atomic_write, written_by_punctkit

    probe = d / ".mark-probe"
    with atomic_write(probe) as f:
        f.write("")
    try:
        return written_by_punctkit(probe)
    finally:
        probe.unlink()


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under `d` (relative path -> bytes)."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    """A directory holding the user's corpus and notes (files punctkit never wrote)."""
    d = tmp_path / "D"
    d.mkdir()
    shutil.copy(BAD / "corpus.tc", d / "corpus.tc")
    shutil.copy(BAD / "notes.txt", d / "notes.txt")
    return d


def test_prepare_into_dir_with_user_files_refuses_then_keeps_them(user_dir):
    before = snapshot(user_dir)
    r = cli("prepare", user_dir / "corpus.tc", "-o", user_dir, ok=False)
    cli_error(r, str(user_dir), "corpus.tc", "--overwrite")
    assert snapshot(user_dir) == before
    cli("prepare", user_dir / "corpus.tc", "-o", user_dir, "--overwrite")
    after = snapshot(user_dir)
    assert {k: after[k] for k in before} == before  # the corpus and the notes are untouched
    fresh = user_dir.parent / "fresh"
    cli("prepare", BAD / "corpus.tc", "-o", fresh, "--name", "D")
    assert (user_dir / "text").read_bytes() == (fresh / "text").read_bytes()


def test_prepare_rerun_over_its_own_output_keeps_other_stages_files(tmp_path):
    d = tmp_path / "data" / "train"
    cli("prepare", BAD / "corpus.tc", "-o", d)
    split_data_dir(d, 2)
    (d / "feats").mkdir()
    (d / "feats" / "feats.ark").write_bytes(b"ark")
    (d / "feats.scp").write_text("x feats/feats.ark:4\n")
    first = snapshot(d)
    cli("prepare", BAD / "corpus.tc", "-o", d)  # a recipe rerun: no --overwrite needed
    assert snapshot(d) == first


def test_stale_labels_and_nbest_go_other_files_stay(tmp_path):
    d = tmp_path / "dec"
    inv = get_inventory("4class")
    write_data_dir(d, [Utterance("u1", ["a", "b"], ["O", "PERIOD"])], inv, extra={"nbest": ["u1 1 -0.1 O PERIOD"]})
    (d / "feats.scp").write_text("u1 x.ark:4\n")
    (d / "notes.txt").write_text("mine\n")
    write_data_dir(d, [Utterance("u1", ["a", "b"], [])], inv, overwrite=True)
    assert not (d / "labels").exists() and not (d / "nbest").exists()  # they would contradict the new text
    assert (d / "feats.scp").read_text() == "u1 x.ark:4\n" and (d / "notes.txt").read_text() == "mine\n"
    assert read_data_dir(d, need_labels=False).utterances[0].words == ["a", "b"]


def test_convert_into_data_dir_with_user_files(user_dir, tmp_path):
    before = snapshot(user_dir)
    r = cli("convert", BAD / "corpus.tc", user_dir, "--to", "datadir", ok=False)
    cli_error(r, str(user_dir), "--overwrite")
    assert snapshot(user_dir) == before
    cli("convert", BAD / "corpus.tc", user_dir, "--to", "datadir", "--overwrite")
    assert {k: v for k, v in snapshot(user_dir).items() if k in before} == before
    # a plain file output replaces a file punctkit did not write only with --overwrite
    (tmp_path / "out.txt").write_text("old\n")
    cli_error(cli("convert", user_dir, tmp_path / "out.txt", ok=False), "out.txt", "--overwrite")
    assert (tmp_path / "out.txt").read_text() == "old\n"
    cli("convert", user_dir, tmp_path / "out.txt", "--overwrite")
    assert "Chris" in (tmp_path / "out.txt").read_text()


def test_output_path_that_is_a_file(tmp_path):
    f = tmp_path / "notes.txt"
    shutil.copy(BAD / "notes.txt", f)
    cli_error(cli("prepare", BAD / "corpus.tc", "-o", f, ok=False), str(f), "not a directory")
    assert f.read_bytes() == (BAD / "notes.txt").read_bytes()


def test_an_input_is_never_an_output(tmp_path):
    a = tmp_path / "a.txt"
    shutil.copy(BAD / "corpus.tc", a)
    cli_error(cli("convert", a, a, ok=False), str(a), "input")
    assert a.read_bytes() == (BAD / "corpus.tc").read_bytes()
    link = tmp_path / "link.txt"
    link.hardlink_to(a)
    cli_error(cli("convert", a, link, ok=False), "input")
    d = tmp_path / "D"
    cli("prepare", a, "-o", d)
    before = snapshot(d)
    cli_error(cli("convert", d, d, ok=False), str(d), "input")
    # an input inside the output directory under a name prepare writes
    cli_error(cli("prepare", d / "text", "--from", "kaldi_text", "-o", d, "--overwrite", ok=False),
                   str(d / "text"), "input")
    assert snapshot(d) == before
    with pytest.raises(PunctkitError, match="input"):
        combine_data_dirs(d, [d, d])
    assert snapshot(d) == before


def test_bpe_apply_onto_its_source(tmp_path):
    d = tmp_path / "D"
    cli("prepare", BAD / "corpus.tc", "-o", d)
    cli("bpe", "train", d, tmp_path / "bpe", "--merges", "20")
    src = tmp_path / "words.txt"
    src.write_text("thank you so much\n")
    cli_error(cli("bpe", "apply", tmp_path / "bpe", src, src, ok=False), str(src), "input")
    assert src.read_text() == "thank you so much\n"
    cli_error(cli("bpe", "apply", tmp_path / "bpe", d, d / "text", ok=False), "input")
    # a frontend directory holding other files is refused as a data directory is
    (tmp_path / "bpe2").mkdir()
    shutil.copy(BAD / "notes.txt", tmp_path / "bpe2" / "notes.txt")
    cli_error(cli("bpe", "train", d, tmp_path / "bpe2", "--merges", "20", ok=False), "--overwrite")
    cli("bpe", "train", d, tmp_path / "bpe2", "--merges", "20", "--overwrite")
    assert (tmp_path / "bpe2" / "notes.txt").read_bytes() == (BAD / "notes.txt").read_bytes()


def test_split_rerun_keeps_unknown_files_and_drops_stale_copies(tmp_path):
    d = tmp_path / "D"
    cli("prepare", BAD / "corpus.tc", "-o", d)
    split_data_dir(d, 2)
    (d / "split2" / "1" / "notes.txt").write_text("mine\n")
    (d / "labels").unlink()
    with pytest.raises(PunctkitError, match="--overwrite"):
        split_data_dir(d, 2)
    split_data_dir(d, 2, overwrite=True)
    assert (d / "split2" / "1" / "notes.txt").read_text() == "mine\n"
    assert not (d / "split2" / "1" / "labels").exists()  # the old copy would contradict the new text
    assert sorted(p.name for p in (d / "split2" / "2").iterdir()) == sorted(
        p.name for p in d.iterdir() if p.is_file())


def test_combine_into_dir_with_user_files(tmp_path):
    d = tmp_path / "D"
    cli("prepare", BAD / "corpus.tc", "-o", d)
    parts = split_data_dir(d, 2)
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(BAD / "notes.txt", out / "notes.txt")
    r = cli("combine-data", out, *parts, ok=False)
    cli_error(r, str(out), "--overwrite")
    cli("combine-data", out, *parts, "--overwrite")
    assert (out / "notes.txt").read_bytes() == (BAD / "notes.txt").read_bytes()
    assert (out / "text").read_bytes() == (d / "text").read_bytes()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A one-epoch model dir, its packed model (ONNX alone: each `punctuate` here starts without torch) and a
    test data dir."""
    d = tmp_path_factory.mktemp("outputs")
    cli("pack", train_tiny(d, TINY, train_lines=2000), "-o", d / "tiny.pkt", "--onnx", "--onnx-only")
    return d


@pytest.mark.slow  # a long decode run (about 15 s)
def test_decode_keeps_user_files_and_never_writes_its_data_dir(tiny, user_dir, tmp_path):
    exp, data = tiny / "exp", tiny / "test"
    before = snapshot(user_dir)
    cli_error(cli("decode", exp, data, user_dir, ok=False), str(user_dir), "--overwrite")
    assert snapshot(user_dir) == before
    cli("decode", exp, data, user_dir, "--overwrite", "--nbest", "2")
    assert {k: v for k, v in snapshot(user_dir).items() if k in before} == before
    assert (user_dir / "nbest").is_file()
    cli("decode", exp, data, user_dir, "--overwrite")  # no n-best now: the old lists are removed
    assert not (user_dir / "nbest").exists()
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    before = snapshot(copy)
    cli_error(cli("decode", exp, copy, copy, ok=False), str(copy), "input")
    cli_error(cli("decode", exp, copy, copy / "text", "--format", "kaldi_text", ok=False), "input")
    assert snapshot(copy) == before


def test_punctuate_datadir_keeps_user_files_and_never_writes_its_input(tiny, user_dir, tmp_path):
    model = tiny / "tiny.pkt"
    src = tmp_path / "in.txt"
    src.write_text("thank you so much chris and it is truly a great honor\n")
    before = snapshot(user_dir)
    r = cli("punctuate", src, "-m", model, "--format", "datadir", "-o", user_dir, ok=False)
    cli_error(r, str(user_dir), "--overwrite")
    assert snapshot(user_dir) == before
    cli("punctuate", src, "-m", model, "--format", "datadir", "-o", user_dir, "--overwrite")
    assert {k: v for k, v in snapshot(user_dir).items() if k in before} == before
    assert read_data_dir(user_dir).words() == len(src.read_text().split())
    cli_error(cli("punctuate", src, "-m", model, "-o", src, ok=False), str(src), "input")
    assert src.read_text() == "thank you so much chris and it is truly a great honor\n"


def test_pack_replaces_a_package_but_no_other_file(tiny, user_dir):
    exp, pkg = tiny / "exp", user_dir / "model.pkt"
    cli("pack", exp, "-o", pkg)
    cli("pack", exp, "-o", pkg)  # a package of its own is replaced
    before = snapshot(user_dir)
    for target in (user_dir / "notes.txt", user_dir / "corpus.tc"):
        cli_error(cli("pack", exp, "-o", target, ok=False), str(target), "not a punctkit package")
        cli_error(cli("pack", exp, exp, "-o", target, ok=False), str(target), "not a punctkit package")
    cli_error(cli("pack", exp, "-o", user_dir, ok=False), str(user_dir), "is a directory")
    assert snapshot(user_dir) == before


@pytest.mark.parametrize("fmt", ["readable", "twocol", "kaldi_text", "jsonl"])
def test_a_file_output_never_replaces_a_users_file(tiny, user_dir, tmp_path, fmt):
    """punctuate -o --format F writes over an existing file only when punctkit wrote it (the mark
    atomic_write leaves) or with --overwrite; a copy of punctkit's output is the user's."""
    model = tiny / "tiny.pkt"
    src = tmp_path / "in.txt"
    src.write_text("thank you so much chris and it is truly a great honor\n")
    notes = user_dir / "notes.txt"
    before = snapshot(user_dir)
    cli_error(cli("punctuate", src, "-m", model, "--format", fmt, "-o", notes, ok=False), str(notes),
                   "--overwrite")
    assert snapshot(user_dir) == before
    out = tmp_path / "out"
    cli("punctuate", src, "-m", model, "--format", fmt, "-o", out)
    if marks_files(tmp_path):  # else every existing file counts as the user's
        cli("punctuate", src, "-m", model, "--format", fmt, "-o", out)  # its own output: replaced on a rerun
    copy = tmp_path / "copy"
    shutil.copy(out, copy)  # a copy the user made is the user's
    cli_error(cli("punctuate", src, "-m", model, "--format", fmt, "-o", copy, ok=False), str(copy), "--overwrite")
    cli("punctuate", src, "-m", model, "--format", fmt, "-o", notes, "--overwrite")  # asked for: replaced
    assert notes.read_text() == out.read_text()


def test_convert_and_decode_to_a_file_never_replace_a_users_file(tiny, user_dir, tmp_path):
    """convert and decode --format kaldi_text, as punctuate -o above: a file punctkit wrote is
    replaced on a rerun (decode's options file beside it too), the user's is refused."""
    exp, data = tiny / "exp", tiny / "test"
    src = tmp_path / "in.txt"
    src.write_text("thank you so much chris and it is truly a great honor\n")
    notes = user_dir / "notes.txt"
    before = snapshot(user_dir)
    cli_error(cli("convert", src, notes, ok=False), str(notes), "--overwrite")
    cli_error(cli("decode", exp, data, notes, "--format", "kaldi_text", ok=False), str(notes), "--overwrite")
    assert snapshot(user_dir) == before
    cli("convert", src, tmp_path / "words.txt")
    hyp = tmp_path / "hyp"
    cli("decode", exp, data, hyp, "--format", "kaldi_text")
    if marks_files(tmp_path):  # else every existing file counts as the user's
        cli("convert", src, tmp_path / "words.txt")
        cli("decode", exp, data, hyp, "--format", "kaldi_text")  # and its options file beside it
    shutil.copy(hyp, user_dir / "hyp.copy")  # a copy the user made is the user's
    cli_error(cli("decode", exp, data, user_dir / "hyp.copy", "--format", "kaldi_text", ok=False),
                   str(user_dir / "hyp.copy"), "--overwrite")


def test_outputs_are_checked_before_the_model_is_read(tiny, user_dir, tmp_path):
    """punctuate and pack refuse an output they may not write before they read a model: the error
    names the output, not the model that is missing (a large model is not loaded, or exported, in vain)."""
    src = tmp_path / "in.txt"
    src.write_text("thank you so much\n")
    notes, missing = user_dir / "notes.txt", tmp_path / "no_such_model.pkt"
    before = snapshot(user_dir)
    cli_error(cli("punctuate", src, "-m", missing, "-o", notes, ok=False), str(notes), "--overwrite")
    cli_error(cli("punctuate", src, "-m", missing, "--probs", ok=False), "--probs", "readable")
    cli_error(cli("pack", tmp_path / "no_such_exp", "-o", notes, ok=False), str(notes), "not a punctkit package")
    cli_error(cli("pack", missing, "-o", notes, ok=False), str(notes), "not a punctkit package")
    cli_error(cli("pack", tiny / "exp", tiny / "exp", "-o", notes, ok=False), str(notes), "not a punctkit package")
    assert snapshot(user_dir) == before
    r = cli("punctuate", src, "-m", missing, "-o", tmp_path / "new.txt", ok=False)  # a free output: the model
    cli_error(r, str(missing))


def test_what_punctkit_wrote_carries_its_mark(tmp_path):
    from punctkit.files import atomic_write, check_output_file, written_by_punctkit

    if not marks_files(tmp_path):
        pytest.skip("this file system keeps neither nanosecond times nor user attributes: every existing file "
                    "counts as the user's")

    p = tmp_path / "f.txt"
    p.write_text("the user's\n")
    assert not written_by_punctkit(p)
    with pytest.raises(PunctkitError, match="did not write it"):
        check_output_file(p)
    check_output_file(p, overwrite=True)
    check_output_file(tmp_path / "absent.txt")
    with atomic_write(p) as f:
        f.write("punctkit's\n")
    assert written_by_punctkit(p)
    check_output_file(p)
    assert not written_by_punctkit(tmp_path)  # a directory is nobody's file here


@pytest.mark.slow  # a training (about 9 s)
def test_w2v_train_and_average_checkpoints_never_replace_a_users_file(tiny, user_dir, tmp_path):
    exp, data, notes = tiny / "exp", tiny / "test", user_dir / "notes.txt"
    before = snapshot(user_dir)
    cli_error(cli("w2v-train", data, notes, "--dim", "4", "--epochs", "1", ok=False), str(notes), "--overwrite")
    cli_error(cli("average-checkpoints", exp, "--n", "1", "--out", notes, ok=False), str(notes), "--overwrite")
    assert snapshot(user_dir) == before
    vec = tmp_path / "w2v.txt"
    for _ in range(1 + marks_files(tmp_path)):  # a rerun replaces its own file (where files keep the mark)
        cli("w2v-train", data, vec, "--dim", "4", "--epochs", "1")
        cli("average-checkpoints", exp, "--n", "1", "--out", tmp_path / "avg.pt")
