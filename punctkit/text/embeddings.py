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


PLM_VECTOR_SOURCES = ("input", "context")


def plm_word_vectors(sentences: Iterable[list[str]], out: str | Path, path: str = "auto", source: str = "input",
                     layer: int = -1, batch_size: int = 16, window: int = 128, show: bool = False) -> int:
    """Static word vectors from a pre-trained LM for the words of `sentences`, written as
    word2vec text; returns the word count.

    `source: input`: the mean of the word's pieces' input embeddings. `source: context`: the
    word's hidden state at `layer` (the mean over its pieces; 0 is the embedding layer, -1 the
    last), averaged over every occurrence in `sentences` (run in windows of at most `window`
    words): a static vector that carries what the PLM makes of the word in context
    (Bommasani et al. 2020). Where no GloVe or word2vec file can be had (offline machines),
    this gives a word model pre-trained lexical vectors, as GloVe does for DRNN-LWMA-pre (Kim 2019)."""
    from gensim.models import KeyedVectors

    from punctkit.text.plm import resolve_plm_dir

    if source not in PLM_VECTOR_SOURCES:
        raise PunctkitError(f"plm_vectors source must be one of {', '.join(PLM_VECTOR_SOURCES)}, not '{source}'")
    d = resolve_plm_dir(path)
    sents = [[w for w in s if w] for s in sentences]
    if not any(sents):
        raise PunctkitError(f"no words to make vectors for ({d})")
    if source == "input":
        vocab, vecs = input_word_vectors(sents, d)
    else:
        vocab, by_layer = pooled_hidden_states(sents, d, [layer], batch_size, window, show)
        vecs = by_layer[layer]
    kv = KeyedVectors(vector_size=vecs.shape[1])
    kv.add_vectors(vocab, vecs)
    write_vectors(kv, out)
    return len(vocab)


def input_word_vectors(sents: list[list[str]], path: str | Path = "auto") -> tuple[list[str], np.ndarray]:
    """The words of `sents` (sorted) and each one's mean input embedding over its word-pieces
    ([UNK] when it has none)."""
    from punctkit.text.plm import input_embeddings, load_tokenizer, resolve_plm_dir

    d = resolve_plm_dir(path)
    tok, table = load_tokenizer(d), input_embeddings(d)
    vocab = sorted({w for s in sents for w in s})
    vecs = np.zeros((len(vocab), table.shape[1]), dtype=np.float32)
    for i, w in enumerate(vocab):
        ids = tok.ids(w) or [tok.unk_id]
        vecs[i] = table[ids].mean(0)
    return vocab, vecs


def pooled_hidden_states(sents: list[list[str]], path: str | Path = "auto", layers: Iterable[int] = (-1,),
                         batch_size: int = 16, window: int = 128,
                         show: bool = False) -> tuple[list[str], dict[int, np.ndarray]]:
    """The words of `sents` (sorted) and, for each of `layers`, a (words, hidden) matrix: each
    word's hidden state at that layer (the mean over its pieces) averaged over its occurrences,
    one pass of the PLM over the text in windows of at most `window` words."""
    import torch

    from punctkit.progress import progress
    from punctkit.text.plm import PlmFrontend, load_pretrained, resolve_plm_dir

    d = resolve_plm_dir(path)
    model = load_pretrained(d, "PLM vectors").eval()
    n_pos = getattr(model.config, "max_position_embeddings", None)
    fe = PlmFrontend.from_path(d, max_len=min(256, n_pos) if n_pos else 256)  # windows the model can take
    n_layers = int(model.config.num_hidden_layers)
    layers = list(layers)
    for layer in layers:
        if not -(n_layers + 1) <= layer <= n_layers:
            raise PunctkitError(f"{d}: plm_vectors layer {layer} out of range (the model has {n_layers} layers; "
                                f"0 is the embedding layer)")
    vocab = sorted({w for s in sents for w in s})
    index = {w: i for i, w in enumerate(vocab)}
    wins = sorted(_piece_windows(sents, fe, window), key=lambda x: len(x[0]))
    sums = {layer: torch.zeros(len(vocab), int(model.config.hidden_size), dtype=torch.float64) for layer in layers}
    counts = torch.zeros(len(vocab), dtype=torch.float64)
    with torch.inference_mode(), progress(total=len(wins), show=show, desc="plm vectors", unit="win") as bar:
        for b in range(0, len(wins), batch_size):
            batch = wins[b:b + batch_size]
            ids = torch.full((len(batch), len(batch[-1][0])), fe.pad_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            owner = torch.full(ids.shape, -1, dtype=torch.long)  # piece -> word occurrence in the batch
            types: list[int] = []
            for r, (win_ids, words) in enumerate(batch):
                ids[r, :len(win_ids)] = torch.tensor(win_ids)
                mask[r, :len(win_ids)] = 1
                for w, start, end in words:
                    owner[r, start:end] = len(types)
                    types.append(index[w])
            hidden = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
            keep = owner >= 0
            n_pieces = torch.bincount(owner[keep], minlength=len(types)).unsqueeze(1)
            t = torch.tensor(types)
            for layer in layers:
                occ = torch.zeros(len(types), hidden[layer].shape[-1], dtype=torch.float64)
                occ.index_add_(0, owner[keep], hidden[layer][keep].double())
                sums[layer].index_add_(0, t, occ / n_pieces)
            counts.index_add_(0, t, torch.ones(len(types), dtype=torch.float64))
            bar.update(len(batch))
    return vocab, {layer: (m / counts.unsqueeze(1)).float().numpy() for layer, m in sums.items()}


def _piece_windows(sents: list[list[str]], fe: Any,
                   window: int) -> Iterable[tuple[list[int], list[tuple[str, int, int]]]]:
    """Each sentence cut into windows of at most `window` words that fit the PLM's `max_len`:
    (ids with special tokens, [(word, first piece, end piece)])."""
    room = fe.max_len - fe.n_special
    for s in sents:
        ids: list[int] = []
        words: list[tuple[str, int, int]] = []
        for w in s:
            p = fe.word_ids(w)[:room]
            if words and (len(words) >= window or len(ids) + len(p) > room):
                yield list(fe.prefix) + ids + list(fe.suffix), words
                ids, words = [], []
            start = len(fe.prefix) + len(ids)
            words.append((w, start, start + len(p)))
            ids.extend(p)
        if words:
            yield list(fe.prefix) + ids + list(fe.suffix), words
