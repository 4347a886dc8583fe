"""Pre-trained word and speech vectors (gensim KeyedVectors) aligned to a word vocabulary.

Formats: `word2vec` (text, with a `count dim` header), `word2vec_binary`,
`glove` (text without a header). Speech2Vec files are word2vec text files
(word -> 50-d). Word and speech vectors are combined by `sum` (Yi & Tao 2019)
or `concat` (Faber 2020).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

from punctkit.files import PunctkitError, atomic_write, require_file

FORMATS = ("word2vec", "word2vec_binary", "glove")


def guess_format(path: str | Path) -> str:
    """`.bin` -> binary word2vec; a first line of two integers -> word2vec text; else GloVe."""
    p = require_file(path, "vector file")
    if p.suffix == ".bin":
        return "word2vec_binary"
    with open(p, encoding="utf-8", errors="replace") as f:
        head = f.readline().split()
    return "word2vec" if len(head) == 2 and all(x.isdigit() for x in head) else "glove"


def load_vectors(path: str | Path, fmt: str | None = None) -> Any:
    """Read word vectors with gensim; one-line error on a malformed file."""
    from gensim.models import KeyedVectors

    p = require_file(path, "vector file")
    fmt = fmt or guess_format(p)
    if fmt not in FORMATS:
        raise PunctkitError(f"unknown vector format '{fmt}' (known: {', '.join(FORMATS)})")
    try:
        return KeyedVectors.load_word2vec_format(str(p), binary=fmt == "word2vec_binary", no_header=fmt == "glove")
    except (ValueError, EOFError, UnicodeDecodeError, IndexError) as e:
        raise PunctkitError(f"{p}: cannot read as {fmt} vectors ({str(e).splitlines()[0][:80]})") from None


def vocab_matrix(tokens: list[str], kv: Any, pad_id: int = 0, seed: int = 1) -> tuple[np.ndarray, int]:
    """(len(tokens), dim) matrix: each token's vector (tried as is, then lower-cased),
    random normal with the vectors' own std for tokens without one, zeros for `pad_id`.
    Returns the matrix and the number of tokens found."""
    rng = np.random.default_rng(seed)
    std = float(np.std(kv.vectors)) if len(kv.vectors) else 1.0
    mat = rng.normal(0.0, std, (len(tokens), kv.vector_size)).astype(np.float32)
    found = 0
    for i, tok in enumerate(tokens):
        for key in (tok, tok.lower()):
            if key in kv.key_to_index:
                mat[i] = kv[key]
                found += 1
                break
    mat[pad_id] = 0.0
    return mat, found


def combine(mats: list[np.ndarray], how: str = "sum") -> np.ndarray:
    """Combine aligned matrices by `sum` (same dims) or `concat`."""
    if len(mats) == 1:
        return mats[0]
    if how == "concat":
        return np.concatenate(mats, axis=1)
    if how == "sum":
        dims = {m.shape[1] for m in mats}
        if len(dims) != 1:
            raise PunctkitError(f"embeddings combine=sum needs vectors of one size, got {sorted(dims)}; use concat")
        return np.sum(mats, axis=0).astype(np.float32)
    raise PunctkitError(f"embeddings combine must be sum or concat, not '{how}'")


def build_matrix(conf: dict[str, Any], tokens: list[str], pad_id: int = 0, seed: int = 1,
                 log: Any = None) -> np.ndarray | None:
    """The `embeddings:` config section -> one matrix aligned to `tokens`, or None without vectors.

    Keys: `word` (path), `word_format`, `speech` (Speech2Vec path, word2vec text), `combine`.
    """
    mats = []
    for key in ("word", "speech"):
        if conf.get(key):
            kv = load_vectors(conf[key], conf.get(f"{key}_format"))
            mat, found = vocab_matrix(tokens, kv, pad_id, seed)
            if log:
                log(f"embeddings: {key} vectors {conf[key]} dim {kv.vector_size}: {found}/{len(tokens)} tokens found")
            if found == 0:
                raise PunctkitError(f"{conf[key]}: none of the {len(tokens)} vocabulary tokens has a vector")
            mats.append(mat)
    return combine(mats, conf.get("combine", "sum")) if mats else None


def train_word2vec(sentences: Iterable[list[str]], out: str | Path, dim: int = 50, window: int = 5,
                   epochs: int = 5, min_count: int = 1, seed: int = 1, workers: int = 1) -> int:
    """Skip-gram word2vec (gensim) on `sentences`; writes word2vec text format; returns the vocabulary size."""
    from gensim.models import Word2Vec

    sents = [list(s) for s in sentences if s]
    if not sents:
        raise PunctkitError(f"no sentences to train word2vec for {out}")
    model = Word2Vec(sentences=sents, vector_size=dim, window=window, min_count=min_count, sg=1,
                     epochs=epochs, seed=seed, workers=workers)
    write_vectors(model.wv, out)
    return len(model.wv)


def write_vectors(kv: Any, out: str | Path) -> None:
    """Write gensim KeyedVectors as a word2vec text file, atomically."""
    with atomic_write(out, "wb") as f:  # gensim writes to a path: give it the temporary one
        f.close()
        kv.save_word2vec_format(f.name)


def plm_word_vectors(words: Iterable[str], out: str | Path, path: str = "auto") -> int:
    """Static word vectors from a pre-trained LM's input embeddings (the mean of each word's
    word-pieces, the PLM's own tokenization), written as word2vec text; returns the word count.

    Where no GloVe or word2vec file can be had (offline machines), this gives a word model
    pre-trained lexical vectors, as GloVe does for DRNN-LWMA-pre (Kim 2019)."""
    from gensim.models import KeyedVectors

    from punctkit.text.plm import input_embeddings, load_tokenizer, resolve_plm_dir

    d = resolve_plm_dir(path)
    tok, table = load_tokenizer(d), input_embeddings(d)
    vocab = sorted(set(w for w in words if w))
    if not vocab:
        raise PunctkitError(f"no words to make vectors for ({d})")
    vecs = np.zeros((len(vocab), table.shape[1]), dtype=np.float32)
    for i, w in enumerate(vocab):
        ids = tok(w, add_special_tokens=False)["input_ids"] or [tok.unk_token_id]
        vecs[i] = table[ids].mean(0)
    kv = KeyedVectors(vector_size=table.shape[1])
    kv.add_vectors(vocab, vecs)
    write_vectors(kv, out)
    return len(vocab)
