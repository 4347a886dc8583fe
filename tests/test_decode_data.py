"""Decoding windows (central prediction), `punctkit decode` outputs and its error paths."""
from __future__ import annotations

import copy
import re

import pytest
import torch

from engine_util import TINY, make_dirs
from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import Utterance, read
from punctkit.data.labels import get_inventory
from punctkit.decode.windows import owners, plan_windows
from punctkit.decode_data import decode_dir
from punctkit.expdir import load_checkpoint
from punctkit.files import PunctkitError
from punctkit.fit import train

# ------------------------------------------------------------------ windows

def stitch(n, windows, preds):
    """Per-word predictions of a stream from per-window predictions (`preds[k]`: one per word of window k)."""
    for k, ((a, b), p) in enumerate(zip(windows, preds)):
        if len(p) != b - a:
            raise PunctkitError(f"window {k} has {b - a} words but {len(p)} predictions")
    return [preds[k][j] for k, j in owners(n, windows)]


@pytest.mark.parametrize("n, length, step", [(1, 5, 2), (4, 5, 2), (5, 5, 5), (20, 5, 5), (20, 5, 1),
                                             (21, 6, 3), (100, 40, 20), (7, 3, 2)])
def test_every_word_predicted_exactly_once_from_its_most_central_window(n, length, step):
    wins = plan_windows(n, length, step)
    assert wins[0][0] == 0 and wins[-1][1] == n
    assert all(b - a == min(length, n) for a, b in wins)
    # each window predicts the global index of its words: stitching must give 0..n-1 back
    assert stitch(n, wins, [list(range(a, b)) for a, b in wins]) == list(range(n))
    own = owners(n, wins)
    for i, (k, j) in enumerate(own):
        a, b = wins[k]
        assert a + j == i

        def centrality(w):
            s, e = w
            return min(i - s if s > 0 else n + 1, e - 1 - i if e < n else n + 1)
        best = max(centrality(w) for w in wins if w[0] <= i < w[1])
        assert centrality(wins[k]) == best
        assert k == min(q for q, w in enumerate(wins) if w[0] <= i < w[1] and centrality(w) == best)


def test_window_choice_example_and_errors():
    wins = plan_windows(10, 4, 2)
    assert wins == [(0, 4), (2, 6), (4, 8), (6, 10)]
    # word 3: position 3 of (0,4) touches a cut, position 1 of (2,6) is one word from both cuts
    assert owners(10, wins)[3] == (1, 1)
    assert owners(10, wins)[0] == (0, 0) and owners(10, wins)[9] == (3, 3)
    assert plan_windows(0, 4, 2) == []
    with pytest.raises(PunctkitError, match="longer than the window"):
        plan_windows(10, 4, 5)
    with pytest.raises(PunctkitError, match="predictions"):
        stitch(10, wins, [[0]] * 4)


# ------------------------------------------------------------------ decoding a data dir

@pytest.fixture(scope="module")
def trained(tmp_path_factory, request):
    from conftest import IWSLT

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    root = tmp_path_factory.mktemp("dec")
    tr, va = make_dirs(IWSLT, root, "1:2000", "2001:2450")
    conf = copy.deepcopy(TINY)
    conf["train"]["epochs"] = 1
    train(conf, tr, va, root / "exp", quiet=True)
    return root


def test_decode_datadir_one_label_per_word_and_nbest(trained):
    out = trained / "hyp"
    decode_dir(trained / "exp", trained / "valid", out, nbest=3, window=30, step=10)
    ref, hyp = read_data_dir(trained / "valid"), read_data_dir(out)
    assert [u.uttid for u in hyp.utterances] == [u.uttid for u in ref.utterances]
    assert [u.words for u in hyp.utterances] == [u.words for u in ref.utterances]
    assert all(len(u.labels) == len(u.words) for u in hyp.utterances)
    assert hyp.utt2spk == ref.utt2spk and hyp.inventory.name == "4class"
    lines = (out / "nbest").read_text().splitlines()
    assert len(lines) == 3 * len(ref.utterances)
    best = {u.uttid: u.labels for u in hyp.utterances}
    for ln in lines:
        uttid, rank, score, *labels = ln.split()
        assert len(labels) == len(best[uttid])
        if rank == "1":
            assert labels == best[uttid]
    scores = [float(ln.split()[2]) for ln in lines[:3]]
    assert scores == sorted(scores, reverse=True)


def test_decode_text_only_dir_to_twocol(trained, tmp_path):
    ref = read_data_dir(trained / "valid")
    write_data_dir(tmp_path / "plain", [Utterance(u.uttid, u.words, []) for u in ref.utterances],
                   ref.inventory, ref.utt2spk)
    decode_dir(trained / "exp", tmp_path / "plain", tmp_path / "out.tsv", fmt="twocol")
    utts, _ = read(tmp_path / "out.tsv", "twocol")
    assert [w for u in utts for w in u.words] == [w for u in ref.utterances for w in u.words]


def test_decode_shows_no_bar_off_a_terminal_and_logs_its_rate(trained, tmp_path, capsys):
    """A progress bar is for a terminal (tests/test_progress.py has one): decoding with standard error
    captured shows none; the summary says what its words/s count."""
    capsys.readouterr()
    logged: list[str] = []
    decode_dir(trained / "exp", trained / "valid", tmp_path / "o", batch_size=4, log=logged.append)
    err = capsys.readouterr().err
    assert "%|" not in err and "\r" not in err, err
    assert re.fullmatch(r"decode: [\d,]+ utterances, [\d,]+ words in [\d.]+ s \([\d,]+ words/s labelling and "
                        r"writing, the models loaded\) -> .*", logged[-1]), logged
    decode_dir(trained / "exp", trained / "valid", tmp_path / "q", log=logged.append, quiet=True)
    assert len([m for m in logged if m.startswith("decode: ")]) == 1


def test_decode_errors(trained, tmp_path):
    with pytest.raises(PunctkitError, match="no config.yaml"):
        decode_dir(tmp_path, trained / "valid", tmp_path / "o")
    unk = [Utterance("u1", ["zzqx", "qqzx", "xxzq"], ["O", "O", "PERIOD"])]
    write_data_dir(tmp_path / "unk", unk, get_inventory("4class"))
    with pytest.raises(PunctkitError, match="none of its 3 words"):
        decode_dir(trained / "exp", tmp_path / "unk", tmp_path / "o")
    six = [Utterance("u1", ["the", "and"], ["O", "EXCLAMATION"])]
    write_data_dir(tmp_path / "six", six, get_inventory("6class"))
    with pytest.raises(PunctkitError, match="inventory 6class differs"):
        decode_dir(trained / "exp", tmp_path / "six", tmp_path / "o")
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(PunctkitError, match="corrupt"):
        decode_dir(trained / "exp", trained / "valid", tmp_path / "o", checkpoint=str(tmp_path / "bad.pt"))
    assert not (tmp_path / "o").exists()


def test_decode_checkpoint_choice_changes_nothing_for_identical_weights(trained, tmp_path):
    a = decode_dir(trained / "exp", trained / "valid", tmp_path / "a", checkpoint="model.best.pt")
    b = decode_dir(trained / "exp", trained / "valid", tmp_path / "b", checkpoint="checkpoints/epoch_1.pt")
    assert a["words"] == b["words"]
    assert (tmp_path / "a" / "labels").read_text() == (tmp_path / "b" / "labels").read_text()
    best = load_checkpoint(trained / "exp" / "model.best.pt")["model"]
    first = load_checkpoint(trained / "exp" / "checkpoints" / "epoch_1.pt")["model"]
    assert all(torch.equal(best[k], first[k]) for k in first)
