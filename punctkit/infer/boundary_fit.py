"""Learning a model's `BoundaryFusion` (decode/boundary.py): how much a turn change and a pause weigh on its marks.

The network is frozen: its distributions over transcripts with speakers and times (Rev's NLP files, as a user
passes them: lower case, no marks) are computed once (`collect`), then the fusion's scales and biases are fitted
by maximum likelihood of the reference labels (`fit`, L-BFGS), each document read with its speakers and times, its
times alone, or its speakers alone (`Variant`, drawn at random), so that a boundary id stands for what an input
of any kind says. Valid chooses the weight (`score_docs` over `weights`): a cue, not a rule.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from punctkit.data.boundaries import N_BOUNDARIES, N_PAUSES, N_TURNS, NOTHING, boundaries
from punctkit.data.formats.base import AsrUtterance, OutputOptions
from punctkit.data.formats.nlp import nlp_units
from punctkit.data.formats.protocol import ReadContext
from punctkit.data.labelled import Times, word_times
from punctkit.data.labels import LabelSet, default_substitution, mark_of
from punctkit.data.tokenize import as_written
from punctkit.data.utterance import Utterance
from punctkit.decode.boundary import BoundaryFusion
from punctkit.files import PunctkitError
from punctkit.infer.engine import Engine
from punctkit.infer.render import UnitRenderer


@dataclass
class Doc:
    """One transcript: the units a user would pass (lower case, no marks), the network's distributions of its
    words (words x labels), the reference label ids, and each word's speaker and times."""

    name: str
    lines: list[AsrUtterance]
    rows: np.ndarray
    targets: np.ndarray
    speakers: list[str | None]
    times: list[Times]
    ref: list[Utterance]


@dataclass(frozen=True)
class Variant:
    """What of a document's turns and times a reading keeps."""

    speakers: bool = True
    times: bool = True


ALL = Variant()
VARIANTS = (Variant(True, True), Variant(False, True), Variant(True, False))  # both, times alone, turns alone


def collect(engine: Engine, ref: Path, blind: Path, rows: np.ndarray | None = None) -> Doc:
    """A document's distributions under `engine` (its fusion off) read from `blind` (the input a user passes),
    and its reference labels from `ref` (the same rows, cased and punctuated: local/blind.py made `blind`);
    `rows`: the distributions computed before (a cache), the network not run."""
    inv = engine.inventory
    rules = default_substitution(inv)
    lines = [u for u in nlp_units.read(blind, ReadContext.of(blind, inv, rules)) if u.words]
    refs = [u for u in nlp_units.read(ref, ReadContext.of(ref, inv, rules)) if u.words]
    words = [w for u in lines for w in u.words]
    ref_written = [as_written(w) for u in refs for w in u.written]
    ref_marks = [m for u in refs for m in u.marks]
    if len(ref_written) != len(words):
        raise PunctkitError(f"{blind}: {len(words)} words, its reference {ref} {len(ref_written)}")
    if rows is None:
        plain = Engine(scorer=engine.scorer.without_boundaries(), chunk_words=engine.chunk_words)
        rows = np.concatenate([d.rows for d in plain.label(lines, one_stream=True, probs=True)])
    if rows.shape != (len(words), len(inv.labels)):
        raise PunctkitError(f"{blind}: cached distributions of shape {rows.shape}, not {len(words)} words")
    targets = np.array([inv.index(inv.label_for(w, m)) for w, m in zip(ref_written, ref_marks)])
    speakers = [u.speaker for u in lines for _ in u.words]
    times = [t for u in lines for t in word_times(u.records, len(u.words))]
    ref_utts = [Utterance(blind.stem, [_scored(w) for w in ref_written], [inv.labels[i] for i in targets])]
    return Doc(blind.stem, lines, rows.astype(np.float32), targets, speakers, times, ref_utts)


def doc_boundaries(doc: Doc, variant: Variant = ALL) -> np.ndarray:
    """The boundary ids of a document's words as `variant` reads it."""
    spk = doc.speakers if variant.speakers else [None] * len(doc.speakers)
    times = doc.times if variant.times else [(None, None)] * len(doc.times)
    return np.array(boundaries(spk, times), dtype=np.int64)


def fit(docs: Sequence[Doc], inventory: LabelSet, *, seed: int = 1, l2: float = 1e-3,
        variants: Sequence[Variant] = VARIANTS, max_iter: int = 200) -> BoundaryFusion:
    """The fusion that maximises the reference labels' likelihood over `docs`, each read as one of `variants`
    drawn at random (`seed`); `l2` pulls scales to 1 and biases to 0. Boundary id 0 stays the network alone.

    The turn and the pause add up: a boundary's bias is its turn's plus its pause's, and its scale 1 plus theirs
    (turn 0 and pause 0, nothing known, add nothing), so that what a turn change says is learned from every turn
    change, timed or not, and what a pause says from every timed word, whoever speaks."""
    from scipy.optimize import minimize

    rng = random.Random(seed)
    marks = tuple(dict.fromkeys(mark_of(lab) for lab in inventory.labels))
    col = np.array([marks.index(mark_of(lab)) for lab in inventory.labels])
    logps, ids, ys = [], [], []
    for d in docs:
        b = doc_boundaries(d, rng.choice(list(variants)))
        keep = b != NOTHING
        logps.append(np.log(np.maximum(d.rows[keep], 1e-12)))
        ids.append(b[keep])
        ys.append(d.targets[keep])
    L = np.concatenate(logps).astype(np.float64)       # (N, labels)
    B = np.concatenate(ids)                            # (N,)
    Y = np.concatenate(ys)                             # (N,)
    n, n_marks = len(Y), len(marks)
    if n == 0:
        raise PunctkitError("no word with a turn or a time to learn from")
    onehot_col = np.eye(n_marks)[col]                  # (labels, marks)

    nt, npause = N_TURNS - 1, N_PAUSES - 1  # the turn's and the pause's own values (0: nothing known)
    turn_of = np.arange(N_BOUNDARIES) // N_PAUSES
    pause_of = np.arange(N_BOUNDARIES) % N_PAUSES
    sizes = (nt, npause, nt * n_marks, npause * n_marks)
    cuts = np.cumsum(sizes)[:-1]

    def tables(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(turn scale, pause scale, turn bias, pause bias), each with a zero row for nothing known."""
        st, sp, bt, bp = np.split(theta, cuts)
        return (np.concatenate([[0.0], st]), np.concatenate([[0.0], sp]),
                np.vstack([np.zeros(n_marks), bt.reshape(nt, n_marks)]),
                np.vstack([np.zeros(n_marks), bp.reshape(npause, n_marks)]))

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        st, sp, bt, bp = tables(theta)
        return 1.0 + st[turn_of] + sp[pause_of], bt[turn_of] + bp[pause_of]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        scale, bias = unpack(theta)
        z = L * scale[B][:, None] + bias[B][:, col]     # (N, labels)
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1)
        nll = (np.log(s) - z[np.arange(n), Y]).sum() / n
        dz = e / s[:, None]
        dz[np.arange(n), Y] -= 1.0
        dz /= n
        g_scale = np.bincount(B, weights=(dz * L).sum(axis=1), minlength=N_BOUNDARIES)
        g_bias = np.zeros((N_BOUNDARIES, n_marks))
        np.add.at(g_bias, B, dz @ onehot_col)
        g = [np.bincount(turn_of, g_scale, N_TURNS)[1:], np.bincount(pause_of, g_scale, N_PAUSES)[1:],
             np.stack([g_bias[turn_of == t].sum(axis=0) for t in range(1, N_TURNS)]).ravel(),
             np.stack([g_bias[pause_of == p].sum(axis=0) for p in range(1, N_PAUSES)]).ravel()]
        reg = l2 * (theta ** 2).sum()
        return nll + reg, np.concatenate(g) + 2 * l2 * theta

    theta0 = np.zeros(sum(sizes))
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    scale, bias = unpack(res.x)
    return BoundaryFusion(marks, np.clip(scale, -49, 49), np.clip(bias, -49, 49), 1.0)


def decided_utterances(engine: Engine, doc: Doc, fusion: BoundaryFusion | None,
                       variant: Variant = ALL) -> list[Utterance]:
    """A document labelled from its cached distributions as `Engine.label` labels one stream (fused, then the
    joint decision, then shown), as corpus utterances for scoring (one utterance, the words as shown)."""
    inv = engine.inventory
    rows = doc.rows.astype(np.float64)
    b = doc_boundaries(doc, variant)
    if fusion is not None:
        rows = fusion.apply(rows, b, inv)
    words = [w for u in doc.lines for w in u.words]
    ids = engine.decision.decide(rows, words, best=[int(i) for i in rows.argmax(axis=1)])
    labels = [inv.labels[i] for i in ids]
    render = UnitRenderer(engine.casing(), True, None)
    opts = OutputOptions(inventory=inv)
    out_words: list[str] = []
    k = 0
    for u in doc.lines:
        mine = labels[k:k + len(u.words)]
        k += len(u.words)
        out_words += [_scored(w) for w in opts.word_column(u, render.show(u, mine))]
    return [Utterance(doc.name, out_words, labels)]


def _scored(word: str) -> str:
    """A word as scored here: without dots or dashes at its end (`Mr.` and `Mr`, `so-` and `so`, whichever the
    writer kept, are one word)."""
    return word.rstrip(".-–—") or word


def score_docs(engine: Engine, docs: Iterable[Doc], fusion: BoundaryFusion | None,
               variant: Variant = ALL) -> dict:
    """punctkit score's result over documents labelled by `decided_utterances` (punctuation F1:
    `overall.f1`; exact-form case F1: `case.exact.f1`)."""
    from punctkit.score import Transcript, score

    inv = engine.inventory
    refs, hyps = [], []
    for d in docs:
        refs += d.ref
        hyps += decided_utterances(engine, d, fusion, variant)
    ref = Transcript.from_utterances(refs, "ref", inv.marks, inventory=inv)
    hyp = Transcript.from_utterances(hyps, "hyp", inv.marks, inventory=inv)
    return score(ref, hyp)
