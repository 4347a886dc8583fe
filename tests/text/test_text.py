"""Vocabularies, BPE/sentencepiece frontends (label placement round trips), pre-trained vectors."""
from __future__ import annotations

import numpy as np
import pytest

from punctkit.files import PunctkitError
from punctkit.text.embeddings import build_matrix, combine, load_vectors, train_word2vec, vocab_matrix
from punctkit.text.frontend import Frontend, load_frontend, train_frontend
from punctkit.text.vocab import Vocab


@pytest.fixture(scope="module")
def sentences(request):
    from conftest import IWSLT

    path = IWSLT / "test2011"
    if not path.is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    rows = [ln.rstrip("\n").split("\t") for ln in open(path, encoding="utf-8")][:6000]
    words = [r[0] for r in rows]
    labels = [r[1] for r in rows]
    return ([words[i:i + 100] for i in range(0, len(words), 100)],
            [labels[i:i + 100] for i in range(0, len(labels), 100)])


def test_vocab_min_count_unk_and_save(tmp_path):
    v = Vocab.build("a b a c a b".split(), min_count=2)
    assert v.tokens == ["<pad>", "<unk>", "a", "b"]
    assert v.id("c") == v.unk_id == 1 and v.pad_id == 0
    v.save(tmp_path / "v.txt")
    assert Vocab.load(tmp_path / "v.txt").tokens == v.tokens
    (tmp_path / "bad.txt").write_text("a\nb\n")
    with pytest.raises(PunctkitError, match="must start with"):
        Vocab.load(tmp_path / "bad.txt")
    # CRLF, a BOM and no final newline read as the same tokens; a line of two tokens is an error naming it
    for name, data in (("crlf.txt", b"<pad>\r\n<unk>\r\na\r\nb\r\n"), ("bom.txt", b"\xef\xbb\xbf<pad>\n<unk>\na\nb\n"),
                       ("open.txt", b"<pad>\n<unk>\na\nb")):
        (tmp_path / name).write_bytes(data)
        assert Vocab.load(tmp_path / name).tokens == v.tokens, name
    (tmp_path / "two.txt").write_bytes(b"<pad>\n<unk>\na b\n")
    with pytest.raises(PunctkitError, match=r"two.txt:3: expected one token per line"):
        Vocab.load(tmp_path / "two.txt")
    (tmp_path / "latin1.txt").write_bytes(b"<pad>\n<unk>\ncaf\xe9\n")
    with pytest.raises(PunctkitError, match=r"latin1.txt.*3"):
        Vocab.load(tmp_path / "latin1.txt")


def _pieces_of_word(fe: Frontend, words: list[str]) -> list[list[str]]:
    toks = fe.tokens(words)
    ids, pos = fe.encode(words)
    assert len(toks) == len(ids) and len(pos) == len(words)
    starts = [0] + [p + 1 for p in pos[:-1]]
    return [toks[a:b + 1] for a, b in zip(starts, pos)]


@pytest.mark.parametrize("conf, strip", [
    ({"kind": "subword_nmt", "merges": 800}, lambda p: p.replace("@@", "")),
    ({"kind": "sentencepiece", "vocab_size": 600, "model_type": "bpe"}, lambda p: p.replace("\u2581", "")),
    ({"kind": "sentencepiece", "vocab_size": 600, "model_type": "unigram"}, lambda p: p.replace("\u2581", "")),
])
def test_subword_label_placement_round_trips(sentences, tmp_path, conf, strip):
    sents, labs = sentences
    fe = train_frontend(conf, sents[:50], tmp_path / "fe")
    words, labels = sents[55], labs[55]  # held-out text: unseen words are split into more pieces
    ids, pos = fe.encode(words)
    assert pos == sorted(set(pos)) and pos[-1] == len(ids) - 1  # one label token per word, the last piece
    assert any(len(p) > 1 for p in _pieces_of_word(fe, words))
    for w, pieces in zip(words, _pieces_of_word(fe, words)):
        assert "".join(strip(p) for p in pieces) == w
    # labels on the last piece (the rest ignored) read back at word_pos give the words' labels
    tok_labels = [None] * len(ids)
    for p, lab in zip(pos, labels):
        tok_labels[p] = lab
    assert [tok_labels[p] for p in pos] == labels
    assert sum(x is not None for x in tok_labels) == len(words)
    again = load_frontend(tmp_path / "fe")
    assert again.encode(words) == (ids, pos) and again.vocab_size == fe.vocab_size


def test_label_on_first_piece(sentences, tmp_path):
    fe = train_frontend({"kind": "subword_nmt", "merges": 300, "label_on": "first"}, sentences[0][:20], tmp_path)
    words = ["punctuation", "is", "restored"]
    ids, pos = fe.encode(words)
    n = [len(fe.piece_strs(w)) for w in words]
    assert n[0] > 1  # 'punctuation' is split, so first != last piece
    assert pos == [0, n[0], n[0] + n[1]]


def test_word_frontend_and_bad_dirs(sentences, tmp_path):
    fe = train_frontend({"kind": "word", "min_count": 2}, sentences[0], tmp_path / "w")
    ids, pos = fe.encode(["the", "zzzunseen"])
    assert pos == [0, 1] and ids[1] == fe.unk_id and ids[0] > 1
    assert fe.unk_rate(["zzz", "qqq"]) == 1.0
    with pytest.raises(PunctkitError, match="frontend description not found"):
        load_frontend(tmp_path / "nowhere")
    with pytest.raises(PunctkitError, match="unknown frontend kind"):
        train_frontend({"kind": "nope"}, sentences[0], tmp_path / "x")


def test_vectors_glove_word2vec_binary_and_matrix(tmp_path):
    (tmp_path / "glove.txt").write_text("the 1 2 3\ncat 4 5 6\n")
    kv = load_vectors(tmp_path / "glove.txt")
    assert kv.vector_size == 3 and list(kv["cat"]) == [4, 5, 6]
    kv.save_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    kvb = load_vectors(tmp_path / "v.bin")
    assert np.allclose(kvb["the"], [1, 2, 3])
    mat, found = vocab_matrix(["<pad>", "<unk>", "The", "dog", "cat"], kv)
    assert found == 2 and mat.shape == (5, 3)
    assert np.all(mat[0] == 0) and np.allclose(mat[2], [1, 2, 3]) and np.allclose(mat[4], [4, 5, 6])
    assert not np.allclose(mat[3], 0)
    assert combine([mat, mat], "concat").shape == (5, 6)
    assert np.allclose(combine([mat, mat], "sum"), 2 * mat)
    with pytest.raises(PunctkitError, match="one size"):
        combine([mat, np.zeros((5, 2), np.float32)], "sum")
    (tmp_path / "s2v.txt").write_text("2 2\nthe 1 1\ndog 2 2\n")  # speech vectors, word2vec text format
    both = build_matrix({"word": tmp_path / "glove.txt", "speech": tmp_path / "s2v.txt", "combine": "concat"},
                        ["<pad>", "<unk>", "the", "dog"])
    assert both.shape == (4, 5) and np.allclose(both[2], [1, 2, 3, 1, 1])
    (tmp_path / "broken.txt").write_text("3 4\nthe 1 2\n")
    with pytest.raises(PunctkitError, match="broken.txt"):
        load_vectors(tmp_path / "broken.txt")


def test_w2v_train_writes_word2vec_text(sentences, tmp_path):
    n = train_word2vec(sentences[0][:10], tmp_path / "w2v.txt", dim=8, epochs=1, seed=1)
    head = (tmp_path / "w2v.txt").read_text().splitlines()[0].split()
    assert head == [str(n), "8"]
    assert load_vectors(tmp_path / "w2v.txt").vector_size == 8



def _substitution(path):
    from punctkit.data.labels import get_inventory, load_substitution

    return load_substitution(path / "frontend.yaml", get_inventory("4class"))


@pytest.mark.parametrize("reader, expect", [
    (load_frontend, "expected a mapping with the frontend's kind"),
    (_substitution, "expected a mapping of mark -> label"),
])
@pytest.mark.parametrize("content", ["kind: [word\n", "- word\n- vocab.txt\n"])
def test_a_broken_yaml_mapping_is_one_line_naming_the_file(tmp_path, reader, expect, content):
    """frontend.yaml and substitution rules go through one reader (punctkit.files.read_yaml_mapping)."""
    (tmp_path / "frontend.yaml").write_text(content)
    with pytest.raises(PunctkitError) as e:
        reader(tmp_path)
    message = "not valid YAML" if content.startswith("kind") else expect
    assert str(e.value).startswith(f"{tmp_path / 'frontend.yaml'}: ") and message in str(e.value)
    assert "\n" not in str(e.value)
