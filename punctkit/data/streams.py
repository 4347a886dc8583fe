"""Data directory -> streams of words -> windows -> padded batches (numpy; no torch here, so
packed models can run without it: punctkit/onnx.py).

Utterances of one speaker in `utt2spk` (in sorted id order) form one *stream*:
IWSLT blocks of one talk are a stream, so windows cross block boundaries and a
model never learns "end of input = PERIOD". A data dir whose utt2spk maps every
utterance to itself gives one stream per utterance. Training windows get a new
random offset every epoch; decoding windows come from punctkit/decode/windows.py.
Decoding a data dir with `segments` (data/timing.py read_timing) or `utt2reco` reads a recording's
utterances, in time order, as one stream instead: a change of speaker between consecutive ones is a
turn, and the segments' edges (or a `ctm`'s word times) give the pauses (`Stream.speakers`,
`Stream.times`, which the engine's boundary fusion reads: decode/boundary.py).
The batch keys are those of punctkit/models/base.py; punctkit/batch.py turns
batches into tensors.

Hook for other inputs (audio): `WindowDataset(..., extra=fn)` where
`fn(stream, window) -> dict[str, array]` adds per-example arrays (e.g. `feats`
(F, D), `feat_mask` (F,), `word_end_frame` (W,)); `pad_batch` pads each along its
first dimension with `pad_values.get(key, 0)`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from punctkit.data.datadir import DataDir, Timing
from punctkit.data.labelled import Times
from punctkit.data.labels import LabelSet
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError

IGNORE = -100  # label id of words that are not learnt or scored


@dataclass
class Stream:
    """Consecutive utterances of one speaker/document (or recording), as one word sequence."""

    key: str
    uttids: list[str]
    starts: list[int]          # index of each utterance's first word in `words`
    words: list[str]
    labels: list[int]          # label ids; IGNORE where unlabelled
    meta: dict[str, Any] = field(default_factory=dict)
    # per utterance, who speaks it (utt2spk) where a stream holds several speakers' turns (a recording's
    # utterances: `segments`), a change between consecutive ones a turn; None: the stream says nothing of turns
    speakers: list[str] | None = None
    times: list[Times] | None = None  # per word, its (start, end) seconds (data dir's `Timing`); None: none known

    def __len__(self) -> int:
        return len(self.words)

    def utt_spans(self) -> list[tuple[str, int, int]]:
        """(uttid, first word, end word) of every utterance."""
        ends = self.starts[1:] + [len(self.words)]
        return list(zip(self.uttids, self.starts, ends))


@dataclass(frozen=True)
class Window:
    """Words [start, end) of stream number `stream`."""

    stream: int
    start: int
    end: int


@dataclass
class StreamOrder:
    """A data directory's utterances in the order its streams read them (`stream_order`), each one's stream key,
    and whether its streams are recordings (a change of speaker between consecutive utterances a turn)."""

    utts: list[Utterance]
    keys: dict[str, str]
    turns: bool


def stream_order(dd: DataDir, timing: Timing | None = None) -> StreamOrder:
    """The one rule of how a data directory's utterances make streams (`make_streams`, and punctuate's reading of
    its `text`: data/formats/text.py): by `utt2spk`, in id order; where the dir names recordings (a `timing` with
    segments, or its `utt2reco`), by recording (an utterance no file places, as in a text directory combined with
    one of turns: the stream of its `utt2spk`, the document, as without those files),
    a recording's utterances in time order (start, then id; in id order where some has no segment)."""
    spans = timing.spans if timing is not None else {}
    named = {**dd.utt2reco, **{u: span.recording for u, span in spans.items()}}
    order = sorted(dd.utterances, key=lambda u: u.uttid)
    if not named:
        return StreamOrder(order, {u.uttid: dd.utt2spk.get(u.uttid, u.uttid) for u in order}, False)
    recording = {u.uttid: named.get(u.uttid, dd.utt2spk.get(u.uttid, u.uttid)) for u in order}
    untimed = {recording[u.uttid] for u in order if u.words and u.uttid not in spans}
    order.sort(key=lambda u: spans[u.uttid].start if u.words and recording[u.uttid] not in untimed
               else 0.0)  # stable: the same start by id
    return StreamOrder(order, recording, True)


def make_streams(dd: DataDir, inventory: LabelSet | None = None, timing: Timing | None = None) -> list[Stream]:
    """Group a data dir's utterances (sorted by id) into streams by `utt2spk`; where the dir names recordings (a
    `timing` with segments, data/timing.py read_timing; or its `utt2reco`), by recording instead: a recording's
    utterances in time order (start, then id; in id order where some has no segment), each one's speaker in
    `Stream.speakers`. With `timing`, each word's times in `Stream.times`.

    Labels are mapped with `inventory` (default: the data dir's own); a data dir
    without labels gives IGNORE everywhere.
    """
    inv = inventory or dd.inventory
    placed = stream_order(dd, timing)
    streams: dict[str, Stream] = {}
    for u in placed.utts:
        if not u.words:
            continue
        spk = dd.utt2spk.get(u.uttid, u.uttid)
        key = placed.keys[u.uttid]
        s = streams.setdefault(key, Stream(key, [], [], [], [], speakers=[] if placed.turns else None,
                                           times=[] if timing is not None else None))
        if s.speakers is not None:
            s.speakers.append(spk)
        if s.times is not None and timing is not None:
            s.times.extend(timing.word_times(u.uttid, len(u.words)))
        s.uttids.append(u.uttid)
        s.starts.append(len(s.words))
        s.words.extend(u.words)
        if u.labels:
            try:
                s.labels.extend(inv.index(lab) for lab in u.labels)
            except KeyError as e:
                raise PunctkitError(f"{dd.path / 'labels'} (utterance {u.uttid}): label {e} is not in "
                                    f"the model's inventory {inv.name}") from None
        else:
            s.labels.extend([IGNORE] * len(u.words))
    if not streams:
        raise PunctkitError(f"{dd.path}: no words")
    return list(streams.values())


def split_utterances(streams: list[Stream]) -> list[Stream]:
    """One stream per utterance (for n-best lists, which are per utterance); its words' times kept."""
    out = []
    for s in streams:
        for k, (uttid, a, b) in enumerate(s.utt_spans()):
            out.append(Stream(uttid, [uttid], [0], s.words[a:b], s.labels[a:b], dict(s.meta),
                              speakers=s.speakers[k:k + 1] if s.speakers is not None else None,
                              times=s.times[a:b] if s.times is not None else None))
    return out


@dataclass(frozen=True)
class TimeDelay:
    """Time-delay training (`train.lookahead: {max: M, p: P}`): with probability p a training window
    is cut after a random word t of its second half plus r ~ U{0..max} words, so t has r words of
    right context; the kept window is [start, cut), learnt on all its words."""

    max: int
    p: float

    @classmethod
    def from_option(cls, value: Any, where: str = "train.lookahead") -> "TimeDelay | None":
        """The option's value checked (None: off)."""
        if value is None:
            return None
        ok = isinstance(value, dict) and set(value) == {"max", "p"}
        m, p = (value.get("max"), value.get("p")) if ok else (None, None)
        if not (isinstance(m, int) and not isinstance(m, bool) and m >= 0
                and isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1):
            raise PunctkitError(f"{where}: expected {{max: WORDS >= 0, p: PROBABILITY 0..1}} or null, got {value!r}")
        return cls(m, float(p))

    def cut(self, a: int, b: int, rng: random.Random) -> int:
        """The end of window [a, b) after the cut (b when this window is not cut)."""
        if rng.random() >= self.p:
            return b
        t = rng.randrange(a + (b - a) // 2, b)
        return min(b, t + 1 + rng.randint(0, self.max))


def train_windows(streams: list[Stream], window: int, seed: int, epoch: int,
                  time_delay: TimeDelay | None = None) -> list[Window]:
    """Cut every stream into windows of about `window` words from a random offset (new each epoch).

    Pieces shorter than window/2 at either end are merged into their neighbour,
    so lengths lie in [window/2, 3*window/2) except for streams shorter than that.
    With `time_delay` (train.lookahead) some windows are then cut shorter at random
    (`TimeDelay`); the words after a cut are not learnt that epoch (the offsets move every epoch).
    """
    rng = random.Random(seed * 100003 + epoch)
    cut_rng = random.Random(seed * 100019 + epoch + 7)  # its own generator: the plain windows stay as they were
    out = []
    for k, s in enumerate(streams):
        n = len(s)
        cuts = sorted({0, n, *range(rng.randrange(window) if n > window else n, n, window)})
        spans = list(zip(cuts[:-1], cuts[1:]))
        if len(spans) > 1 and spans[0][1] - spans[0][0] < window // 2:
            spans[:2] = [(spans[0][0], spans[1][1])]
        if len(spans) > 1 and spans[-1][1] - spans[-1][0] < window // 2:
            spans[-2:] = [(spans[-2][0], spans[-1][1])]
        a, b = spans[0]
        if len(spans) == 1 and b - a >= window + window // 2 > 1:  # both ends merged into one middle piece
            spans = [(a, (a + b) // 2), ((a + b) // 2, b)]
        if time_delay is not None:
            spans = [(a, time_delay.cut(a, b, cut_rng)) for a, b in spans]
        out += [Window(k, a, b) for a, b in spans]
    return out


Extra = Callable[[Stream, Window], dict[str, Any]]


def join_extras(first: Extra | None, second: Extra) -> Extra:
    """Two extras as one (`first` None: `second`): each window gets the keys of both (a data directory's audio
    and its words' boundary ids)."""
    if first is None:
        return second
    return lambda stream, window: {**first(stream, window), **second(stream, window)}
# (frontend, words, labels, soft rows or None, seed key) -> (token ids, word_pos, labels, soft rows):
# training-time noise on a window (punctkit/train/augment.py)
Augment = Callable[[Any, list[str], list[int], "np.ndarray | None", tuple[int, ...]],
                   tuple[list[int], list[int], list[int], "np.ndarray | None"]]


class WindowDataset:
    """Examples for a list of windows over `streams`, encoded by `frontend`.

    An example is a dict: `tokens`, `word_pos`, `labels` (lists), `index` (its
    position in `windows`), plus whatever `extra(stream, window)` returns. With `soft`
    (per stream, words x labels: a teacher's distributions, train/distill.py) it also
    has `soft`, the window's rows. `augment` (training only) rewrites each window's
    words, keyed by (epoch, stream, start) so every epoch draws anew.
    """

    def __init__(self, streams: list[Stream], frontend: Any, windows: list[Window] | None = None,
                 extra: Extra | None = None, max_tokens: int | None = None,
                 soft: list[np.ndarray] | None = None, augment: Augment | None = None):
        self.streams = streams
        self.frontend = frontend
        self.extra = extra
        self.max_tokens = max_tokens
        self.soft = soft
        self.augment = augment
        self.epoch = 0
        if augment is not None and extra is not None:
            raise PunctkitError("train.augment inserts and deletes words: it cannot be used with audio inputs")
        self.windows: list[Window] = windows if windows is not None else [
            Window(k, 0, len(s)) for k, s in enumerate(streams)]

    def set_windows(self, windows: list[Window], epoch: int = 0) -> None:
        """Replace the windows (a new epoch's random offsets)."""
        self.windows, self.epoch = windows, epoch

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        w = self.windows[i]
        s = self.streams[w.stream]
        words, labels = s.words[w.start:w.end], s.labels[w.start:w.end]
        soft = self.soft[w.stream][w.start:w.end] if self.soft is not None else None
        if self.augment is not None:
            ids, word_pos, labels, soft = self.augment(self.frontend, words, labels, soft,
                                                       (self.epoch, w.stream, w.start))
        else:
            ids, word_pos = self.frontend.encode(words)
        if self.max_tokens and len(ids) > self.max_tokens:
            raise PunctkitError(f"window of {w.end - w.start} words of stream {s.key} has {len(ids)} tokens, "
                                f"more than max_tokens={self.max_tokens}: use a smaller window")
        ex: dict[str, Any] = {"tokens": ids, "word_pos": word_pos, "labels": labels, "index": i}
        if soft is not None:
            ex["soft"] = soft
        if self.extra is not None:
            ex.update(self.extra(s, w))
        return ex

    def n_words(self, i: int) -> int:
        """Length in words of example i (for bucketing)."""
        w = self.windows[i]
        return w.end - w.start


def pad_batch(examples: list[dict[str, Any]], pad_id: int = 0,
              pad_values: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """Pad a list of examples into numpy arrays: `tokens, token_mask, word_pos, word_mask, labels,
    index` (int64 / bool), and every extra key padded along its first dimension with
    `pad_values.get(key, 0)`."""
    pad_values = {"soft": IGNORE, **(pad_values or {})}  # a padded word has no teacher row
    B = len(examples)
    t_len = np.array([len(e["tokens"]) for e in examples], dtype=np.int64)
    w_len = np.array([len(e["word_pos"]) for e in examples], dtype=np.int64)
    T, W = int(t_len.max()), int(w_len.max())
    tokens = np.full((B, T), pad_id, dtype=np.int64)
    word_pos = np.zeros((B, W), dtype=np.int64)
    labels = np.full((B, W), IGNORE, dtype=np.int64)
    for b, e in enumerate(examples):
        tokens[b, : t_len[b]] = e["tokens"]
        word_pos[b, : w_len[b]] = e["word_pos"]
        labels[b, : len(e["labels"])] = e["labels"]
    batch = {
        "tokens": tokens,
        "token_mask": np.arange(T)[None, :] < t_len[:, None],
        "word_pos": word_pos,
        "word_mask": np.arange(W)[None, :] < w_len[:, None],
        "labels": labels,
        "index": np.array([e["index"] for e in examples], dtype=np.int64),
    }
    for key in examples[0]:
        if key not in batch:
            batch[key] = _pad_stack([np.asarray(e[key]) for e in examples], pad_values.get(key, 0))
    return batch


def _pad_stack(arrs: list[np.ndarray], pad: float) -> np.ndarray:
    if arrs[0].ndim == 0:
        return np.stack(arrs)
    n = max(a.shape[0] for a in arrs)
    out = np.full((len(arrs), n, *arrs[0].shape[1:]), pad, dtype=arrs[0].dtype)
    for b, a in enumerate(arrs):
        out[b, : a.shape[0]] = a
    return out


def bucket_batches(lengths: list[int], batch_size: int, shuffle: bool = True, seed: int = 1,
                   bucket: int = 50) -> list[list[int]]:
    """Batches of example indices of similar length.

    Shuffled: random chunks of `bucket * batch_size` examples, each sorted by
    length and cut into batches, then the batches shuffled. Not shuffled: sorted by length.
    """
    idx = list(range(len(lengths)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(idx)
    chunk = bucket * batch_size if shuffle else max(len(idx), 1)
    batches = []
    for c in range(0, len(idx), chunk):
        part = sorted(idx[c: c + chunk], key=lambda i: lengths[i])
        batches += [part[i: i + batch_size] for i in range(0, len(part), batch_size)]
    if shuffle:
        rng.shuffle(batches)
    return batches


def shard(batches: list[list[int]], rank: int = 0, world_size: int = 1) -> list[list[int]]:
    """The one place where data is split between processes (DDP): every `world_size`-th batch."""
    if world_size <= 1:
        return batches
    n = len(batches) - len(batches) % world_size  # equal batch counts keep DDP processes in step
    return batches[rank:n:world_size]
