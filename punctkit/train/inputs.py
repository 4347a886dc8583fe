"""Stage 3 (`punctkit prepare-inputs`): what a model reads, learned from the training data.

- the frontend (vocabulary, BPE or sentencepiece model) into `OUT/frontend`; true-case data
  give one that reads words lower-cased and holds the case lexicon of their Mixed forms; other
  training text that carries case (4class data of published text) is read lower-cased too, unless
  the config says `frontend.lowercase: false` (`reads_lowercase`);
- the word vectors a config derives (`embeddings: {w2v_train: ...}` -> `OUT/w2v.txt`,
  `{plm_vectors: ...}` -> `OUT/plm_vectors.txt`);
- the embedding matrix a model starts from (`embedding_matrix`: stage 3's vectors, or the
  configured `word`/`speech` files, over the frontend's vocabulary).

A config whose `train.init` is a packed model takes that package's frontend instead (`prepare_inputs`' `frontend`,
which punctkit/package/to_torch.py reads).

Training reuses stage 3's files (`--inputs`), or makes them into the experiment itself.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable

import numpy as np

from punctkit.data.case_prior import CasePrior, case_prior
from punctkit.data.datadir import read_data_dir
from punctkit.data.labels import CaseLexicon
from punctkit.data.tokenize import iwslt_tokens
from punctkit.files import PunctkitError, check_output_dir
from punctkit.text.frontend import Frontend, train_frontend
from punctkit.train.warm_start import init_package

INPUTS_FILES = ("frontend/", "w2v.txt", "plm_vectors.txt")  # what prepare_inputs writes


def prepare_inputs(conf: dict[str, Any], train_dir: str | Path, out_dir: str | Path,
                   log: Callable[[str], None] = print, overwrite: bool = False,
                   frontend: Frontend | None = None) -> Frontend:
    """Stage 3: build the frontend into `out_dir/frontend` and the word vectors the config
    derives (`embeddings: {w2v_train: ...}` or `{plm_vectors: ...}`, see `derived_vectors`).
    `out_dir` may hold only these unless `overwrite` (other files are kept either way).
    A given `frontend` (a `train.init` package's: punctkit/package/to_torch.py `package_frontend`) is saved
    there instead, nothing learned."""
    out = Path(out_dir)
    check_output_dir(out, INPUTS_FILES, overwrite=overwrite, inputs=[train_dir])
    package = init_package(conf)
    if frontend is not None:
        frontend.save(out / "frontend", overwrite=overwrite)
        log(f"frontend {frontend.kind}: {frontend.vocab_size} tokens, the package's (train.init: {package}) -> "
            f"{out / 'frontend'}")
        return frontend
    if package is not None:
        raise PunctkitError(f"train.init: {package}: a packed model, whose frontend `punctkit prepare-inputs` writes "
                            f"(punctkit.package.to_torch.package_frontend gives it to prepare_inputs): run that")
    dd = read_data_dir(train_dir)
    fe = build_frontend(conf, dd, out / "frontend", overwrite, log)
    derived_vectors(conf["embeddings"], dd, out, log, lowercase=fe.lowercase)
    return fe


def build_frontend(conf: dict[str, Any], dd: Any, out: Path, overwrite: bool = False,
                   log: Callable[[str], None] = print) -> Frontend:
    """The config's frontend learned from data dir `dd` into `out`. True-case data (exact forms in its
    text) give a frontend that reads words lower-cased and holds the case lexicon of their Mixed forms."""
    fconf = dict(conf["frontend"] or {})
    fconf["lowercase"] = reads_lowercase(fconf, dd, log)
    sentences = _sentences(dd, fconf["lowercase"])
    if "split_contractions" not in fconf and iwslt_tokens(w for s in sentences for w in s):
        fconf["split_contractions"] = True
        log("the training text has IWSLT's split contractions (do n't, i 'm): readers split users' words so")
    fe = train_frontend(fconf, sentences, out, overwrite=overwrite)
    if dd.inventory.true_case:
        fe.case_lexicon = CaseLexicon.build(w for u in dd.utterances for w in u.words)
        fe.case_prior = case_prior(dd)
        fe.save(out, overwrite=True)
        log(f"case lexicon: {len(fe.case_lexicon)} Mixed-case words -> {out / CaseLexicon.FILE}")
        log(f"case prior: {len(fe.case_prior)} words' capitals inside sentences -> {out / CasePrior.FILE}")
    log(f"frontend {fe.kind}: {fe.vocab_size} tokens -> {out}")
    return fe


CASED_SHARE = 0.01  # training text with more words than this carrying a capital is cased text


def reads_lowercase(fconf: dict[str, Any], dd: Any, log: Callable[[str], None] = print) -> bool:
    """Whether the model reads words lower-cased: always for true-case data (the case is in the labels);
    else as the config's `frontend.lowercase` says; unset, when the training text carries case (more
    than CASED_SHARE of its words have a capital): a model that learned from capitals would meet
    none in lower-cased input (IWSLT's valid and test, a recognizer's words)."""
    if dd.inventory.true_case:
        return True
    if fconf.get("lowercase") is not None:
        return bool(fconf["lowercase"])
    n = sum(len(u.words) for u in dd.utterances)
    cased = sum(1 for u in dd.utterances for w in u.words if w != w.lower())
    if cased <= CASED_SHARE * n:
        return False
    log(f"the training text carries case ({100.0 * cased / n:.1f} % of its words have capitals) and its "
        f"labels do not: the model reads words lower-cased (set frontend.lowercase: false to read case)")
    return True


DERIVED_VECTORS = {"w2v_train": "w2v.txt", "plm_vectors": "plm_vectors.txt"}


def derived_vectors(econf: dict[str, Any], dd: Any, out: Path, log: Callable[[str], None] = print,
                    look_in: tuple[Path, ...] = (), lowercase: bool = False) -> Path | None:
    """The word vectors an `embeddings:` section derives from the training data: word2vec trained
    on its text (`w2v_train`), or static vectors of its words from a pre-trained LM (`plm_vectors`),
    written to `out`/w2v.txt or plm_vectors.txt; a file already in one of `look_in` is used as it
    is (training reuses stage 3's; stage 3 always rebuilds). None when the section derives none.
    `lowercase`: the frontend reads words lower-cased, so the vectors are of lower-cased words."""
    key = next((k for k in DERIVED_VECTORS if econf.get(k) is not None), None)
    if key is None:
        return None
    for d in look_in:
        if (d / DERIVED_VECTORS[key]).is_file():
            return d / DERIVED_VECTORS[key]
    path = out / DERIVED_VECTORS[key]
    opts = dict(econf[key] or {})
    from punctkit.text.embeddings import plm_word_vectors, train_word2vec

    make = train_word2vec if key == "w2v_train" else plm_word_vectors
    known = [k for k in inspect.signature(make).parameters if k not in ("sentences", "out", "show")]
    bad = [k for k in opts if k not in known]
    if bad:
        raise PunctkitError(f"embeddings.{key}: unknown option(s) {', '.join(bad)} (known: {', '.join(known)})")
    if key == "plm_vectors":
        opts["show"] = True
    n = make(_sentences(dd, lowercase), path, **opts)
    log(f"{key}: {n} words -> {path}")
    return path


def _sentences(dd: Any, lowercase: bool) -> list[list[str]]:
    """Training text for frontends and word vectors: each utterance's words (sentencepiece skips very long
    lines), lower-cased when the model reads words lower-cased (`Frontend.lowercase`)."""
    if lowercase:
        return [[w.lower() for w in u.words] for u in dd.utterances if u.words]
    return [u.words for u in dd.utterances if u.words]


def embedding_matrix(conf: dict[str, Any], frontend: Frontend, inputs: Path, exp: Path, dd: Any,
                     log: Callable[[str], None]) -> np.ndarray | None:
    """The pre-trained vectors of the frontend's tokens (`embeddings: word/speech`, or the derived
    vectors of `inputs` (stage 3's) or `exp`, made into `exp` when neither has them); None without any."""
    econf = dict(conf["embeddings"])
    if not econf.get("word"):
        path = derived_vectors(econf, dd, exp, log, look_in=(inputs, exp), lowercase=frontend.lowercase)
        if path is not None:
            econf["word"] = str(path)
    if not (econf.get("word") or econf.get("speech")):
        return None
    tokens = getattr(getattr(frontend, "vocab", None), "tokens", None)
    if frontend.kind != "word" or tokens is None:
        raise PunctkitError(f"pre-trained word/speech vectors need the 'word' frontend, not '{frontend.kind}'")
    from punctkit.text.embeddings import build_matrix

    return build_matrix(econf, tokens, frontend.pad_id, conf["train"]["seed"], log)
