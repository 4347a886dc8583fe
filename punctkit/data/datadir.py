"""Kaldi-style data directories: the interface between stages.

Files, each sorted by key (C locale) with one line per utterance:
- `text`     `uttid w1 w2 ...` (unpunctuated words)
- `labels`   `uttid L1 L2 ...` (one label per word of `text`)
- `utt2spk`  `uttid spk` (for text streams the speaker is the document: windows
             may cross consecutive utterances of one speaker)
- `spk2utt`  `spk utt1 utt2 ...`
- `inventory` the label inventory name (`4class`, `case4`, ...)
- `utt2reco` `uttid recid` (optional): the recording an utterance is of where no `segments` line places it (a
             transcript's speaker turns without times: data/prepare.py); a recording's utterances are one stream
Audio adds `wav.scp`, `segments`, `ctm`, `feats.scp`, `utt2num_frames` (feats/).
`segments` and `ctm` also say when words were spoken (data/timing.py `read_timing`): `punctkit decode` reads a
recording's utterances as one stream, its speaker changes as turns and its pauses (data/streams.py).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from punctkit.data.labelled import Times
from punctkit.data.labels import LabelSet, get_inventory, inventory_for
from punctkit.data.tokenize import split_words
from punctkit.data.utterance import Utterance, is_one_word
from punctkit.files import OutputDir, PunctkitError, check_output_dir, iter_lines, output_dir, where

# Files keyed by utterance id (split/combine keep them consistent).
UTT_FILES = ("text", "labels", "probs", "utt2spk", "segments", "feats.scp", "utt2num_frames", "ctm", "utt2dur",
             "case_unknown")

# Every entry punctkit (or a Kaldi stage before it) writes into a data directory: a
# directory holding only these may be written again (a recipe rerun over its data/).
DATA_DIR_FILES = ("text", "labels", "probs", "utt2*", "spk2*", "reco2*", "inventory", "nbest", "case_unknown",
                  "segments", "wav.scp", "feats.scp", "feats.info", "cmvn.scp", "cmvn.ark", "ctm", "frame_shift",
                  "*.log", "score.txt", "score.json", "recognize.json", "decode_options.yaml", "split[0-9]*/", "log/",
                  "feats/", "data/")
# Files the data-directory writers themselves write and that contradict a new `text` when
# left from an earlier run: a new output without labels (or n-best lists) removes the old ones.
DATA_DIR_STALE = ("labels", "nbest", "probs")


def read_table(path: str | Path, check_sorted: bool = True) -> "OrderedDict[str, str]":
    """Read `key rest-of-line` lines into an ordered dict; errors name file and line."""
    p = Path(path)
    table: OrderedDict[str, str] = OrderedDict()
    prev = None
    for i, line in iter_lines(p):
        if not line.strip():
            continue
        key, _, rest = line.partition(" ")
        if key in table:
            raise PunctkitError(f"{where(p, i)}: duplicate key '{key}'")
        if check_sorted and prev is not None and key < prev:
            raise PunctkitError(f"{where(p, i)}: not sorted ('{key}' after '{prev}'); sort with LC_ALL=C")
        table[key] = rest.strip()
        prev = key
    return table


@dataclass
class DataDir:
    """A data directory read into memory (text, labels, speakers, and the recordings `utt2reco` names)."""

    path: Path
    utterances: list[Utterance]
    inventory: LabelSet
    utt2spk: dict[str, str] = field(default_factory=dict)
    utt2reco: dict[str, str] = field(default_factory=dict)

    def words(self) -> int:
        """Number of words over all utterances."""
        return sum(len(u.words) for u in self.utterances)


def read_data_dir(path: str | Path, inventory: LabelSet | None = None, need_labels: bool = True) -> DataDir:
    """Read and check `text`/`labels` (+ `utt2spk`) of a data directory."""
    d = Path(path)
    if not d.is_dir():
        raise PunctkitError(f"data directory not found: {d}")
    text = read_table(d / "text") if (d / "text").is_file() else None
    if text is None:
        raise PunctkitError(f"{d}: no 'text' file (not a data directory?)")
    if inventory is None and (d / "inventory").is_file():
        inventory = get_inventory((d / "inventory").read_text().strip())
    labels = read_table(d / "labels") if (d / "labels").is_file() else None
    if labels is None and need_labels:
        raise PunctkitError(f"{d}: no 'labels' file")
    utts = []
    lines = {k: i for i, k in enumerate(labels or {}, 1)}
    for uttid, words in text.items():
        ws = split_words(words)  # a word's no-break space is the word's (punctuate writes `10\u00a0km`)
        if labels is None:
            utts.append(Utterance(uttid, ws, []))
            continue
        if uttid not in labels:
            raise PunctkitError(f"{d / 'labels'}: no line for utterance '{uttid}' of {d / 'text'}")
        labs = labels[uttid].split()
        loc = where(d / "labels", lines[uttid], uttid)
        if len(labs) != len(ws):
            raise PunctkitError(f"{loc}: {len(labs)} labels for {len(ws)} words in text")
        if inventory is not None:
            for lab in labs:
                if lab not in inventory:
                    raise PunctkitError(f"{loc}: unknown label '{lab}' (inventory {inventory.name})")
        utts.append(Utterance(uttid, ws, labs))
    if labels is not None and len(labels) != len(text):
        extra = next(k for k in labels if k not in text)
        raise PunctkitError(f"{d / 'labels'}: utterance '{extra}' is not in {d / 'text'}")
    if inventory is None:
        inventory = inventory_for({lab for u in utts for lab in u.labels} or {"O"})
    utt2spk = dict(read_table(d / "utt2spk")) if (d / "utt2spk").is_file() else {u.uttid: u.uttid for u in utts}
    return DataDir(d, utts, inventory, utt2spk, read_utt2reco(d, text))


def read_utt2reco(d: Path, text: "OrderedDict[str, str]") -> dict[str, str]:
    """A data directory's `utt2reco` (`uttid recid` lines; none without the file), its utterances those of
    `text`."""
    if not (d / "utt2reco").is_file():
        return {}
    out: dict[str, str] = {}
    for i, line in iter_lines(d / "utt2reco"):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or fields[0] not in text or fields[0] in out:
            why = ("expected 'uttid recid'" if len(fields) != 2 else
                   f"utterance '{fields[0]}' is not in {d / 'text'}" if fields[0] not in text else
                   f"utterance '{fields[0]}' is named twice")
            raise PunctkitError(f"{where(d / 'utt2reco', i)}: {why}; give each utterance's recording once")
        out[fields[0]] = fields[1]
    return out


# A recording's times are rounded to microseconds: a time split into a segment's start and a ctm's offset
# is then the number the same time read whole is (an NLP call's `ts`, and the data directory made of it).
TIME_DIGITS = 6


@dataclass(frozen=True)
class Span:
    """An utterance's stretch of its recording (a `segments` line): seconds from the recording's start; `end`
    None where it runs to the recording's end (Kaldi's -1)."""

    recording: str
    start: float
    end: float | None


@dataclass
class Timing:
    """When a data directory's words were spoken: each utterance's `Span` (its `segments` line; none without
    that file) and its words' (start, end) seconds (its `ctm` lines: from the start of its recording where
    `segments` places the utterance, else from the utterance's own start)."""

    spans: dict[str, Span] = field(default_factory=dict)
    words: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        """Whether the data directory says anything about times (a `segments` or a `ctm` file)."""
        return bool(self.spans or self.words)

    def word_times(self, uttid: str, n: int) -> list[Times]:
        """The (start, end) seconds of each of the `n` words of `uttid`: its ctm's; without ctm lines, its
        segment's edges as its first word's start and its last word's end (the pause between two segments
        is known, the pauses inside one are not). Where no segment places the utterance in a recording, its
        first word's start is unknown: its times count from its own start, no pause before it is known."""
        span = self.spans.get(uttid)
        times: list[Times] = list(self.words.get(uttid, [])) or [(None, None)] * n
        if n and uttid not in self.words and span is not None:
            times[0] = (span.start, None)
            times[-1] = (times[-1][0], span.end)
        if n and span is None:
            times[0] = (None, times[0][1])
        return times


def check_data_dir_output(path: str | Path, overwrite: bool = False, inputs: list[str | Path] | tuple = ()) -> None:
    """Fail now, before a long computation, if `write_data_dir` would refuse `path`."""
    check_output_dir(path, DATA_DIR_FILES, overwrite=overwrite, inputs=inputs)


def write_data_dir(path: str | Path, utts: list[Utterance], inventory: LabelSet,
                   utt2spk: dict[str, str] | None = None, extra: dict[str, list[str]] | None = None,
                   overwrite: bool = False, inputs: list[str | Path] | tuple = ()) -> None:
    """Write a data directory (sorted by utterance id); `extra`: other files' lines.

    Through `output_dir`: `path` may hold only data-directory files unless `overwrite`
    (other files are kept either way), each file is replaced on its own, and an old
    `labels` or `nbest` the new output lacks is removed (it would contradict `text`);
    files other stages added (feats.scp, wav.scp, ...) are kept. `inputs`: the command's
    input files and directories, which the output may not replace.
    """
    utts = sorted(utts, key=lambda u: u.uttid)
    ids = [u.uttid for u in utts]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise PunctkitError(f"{path}: duplicate utterance id '{dup}'")
    spk = utt2spk or {u.uttid: u.uttid for u in utts}
    for kind, names in (("utterance", ids), ("speaker", [spk[i] for i in ids])):
        bad = next((x for x in names if not is_one_word(x)), None)
        if bad is not None:
            raise PunctkitError(f"{path}: {kind} id {bad!r} is empty or holds white space (Kaldi's files "
                                "are split on it); give ids of one word")
    with output_dir(path, DATA_DIR_FILES, overwrite=overwrite, inputs=inputs, stale=DATA_DIR_STALE) as out:
        out.write_lines("text", (f"{u.uttid} {' '.join(u.words)}" for u in utts))
        if any(u.labels for u in utts):
            out.write_lines("labels", (f"{u.uttid} {' '.join(u.labels)}" for u in utts))
        out.write_lines("utt2spk", (f"{i} {spk[i]}" for i in ids))
        spk2utt: dict[str, list[str]] = {}
        for i in ids:
            spk2utt.setdefault(spk[i], []).append(i)
        out.write_lines("spk2utt", (f"{s} {' '.join(us)}" for s, us in sorted(spk2utt.items())))
        out.write_lines("inventory", [inventory.name])
        for name, lines in (extra or {}).items():
            out.write_lines(name, lines)


# ------------------------------------------------------------------ split and combine
# A data directory's files, by what their first field names:
#   utterance: UTT_FILES and any utt2* file (ctm: many lines per key; when its
#              keys are recording ids it is treated as a recording file)
#   recording: wav.scp and reco2* (utterances find theirs through `segments`;
#              without `segments` the recording id is the utterance id)
#   speaker:   cmvn.scp and spk2* (spk2utt itself is regenerated from utt2spk)
# A cmvn.scp holding only the key CMVN_GLOBAL (global stats, `compute-cmvn` without
# --per-spk) serves every utterance, so it is copied whole like the files below.
# Any other file (inventory, prepare.log, ...) is copied whole into every part;
# combining keeps it when all inputs agree (`inventory` must agree).

MUST_AGREE = ("inventory", "frame_shift")
CMVN_GLOBAL = "global"  # the one key of global cmvn stats (feats/cmvn.py writes and reads it)


@dataclass
class _Keyed:
    """One keyed file: its kind and its lines, as (key, line as written)."""

    kind: str
    lines: list[tuple[str, str]]


def _kind_of(name: str) -> str | None:
    if name == "spk2utt":
        return "spk2utt"
    if name in UTT_FILES or name.startswith("utt2"):
        return "utt"
    if name == "wav.scp" or name.startswith("reco2"):
        return "reco"
    if name == "cmvn.scp" or name.startswith("spk2"):
        return "spk"
    return None


def _keyed_lines(path: Path) -> list[tuple[str, str, int]]:
    """(key, line, line number) of each non-empty line, in file order."""
    return [(line.split(maxsplit=1)[0], line, i) for i, line in iter_lines(path) if line.strip()]


def _is_global_cmvn(rows: list[tuple[str, str, int]], spks: set[str]) -> bool:
    """Whether cmvn.scp's lines are global stats (one key, CMVN_GLOBAL, that names no speaker)."""
    return [k for k, _, _ in rows] == [CMVN_GLOBAL] and CMVN_GLOBAL not in spks


@dataclass
class _Contents:
    """A data directory's files in memory, classified for splitting and combining."""

    path: Path
    utts: list[str]
    utt2spk: dict[str, str]
    utt2reco: dict[str, str]
    keyed: dict[str, _Keyed]
    whole: dict[str, bytes]
    stream: dict[str, str]  # the stream decode reads each utterance in (data/streams.py stream_order's rule)


def _read_contents(path: str | Path) -> _Contents:
    """Read every file of a data directory; keys must name known utterances/recordings."""
    d = Path(path)
    if not d.is_dir():
        raise PunctkitError(f"data directory not found: {d}")
    master = d / "utt2spk" if (d / "utt2spk").is_file() else d / "text"
    if not master.is_file():
        raise PunctkitError(f"{d}: no 'utt2spk' or 'text' file (not a data directory?)")
    table = read_table(master)
    utts = list(table)
    utt2spk = dict(table) if master.name == "utt2spk" else {u: u for u in utts}
    named: dict[str, str] = {}  # the recordings utt2reco and segments name
    for f in ("utt2reco", "segments"):
        if (d / f).is_file():
            named.update({u: rest.split()[0] if rest else u for u, rest in read_table(d / f).items()})
    utt2reco = {u: named.get(u, u) for u in utts}
    # decode's streams: by recording where the dir names some (an utterance none places: its speaker's), else by
    # speaker
    stream = {u: named.get(u, utt2spk[u]) for u in utts}
    uset, recos, spks = set(utts), set(utt2reco.values()), set(utt2spk.values())
    keyed: dict[str, _Keyed] = {}
    whole: dict[str, bytes] = {}
    for f in sorted(d.iterdir()):
        if not f.is_file() or f.name.startswith("."):
            continue
        kind = _kind_of(f.name)
        if kind is not None and kind != "spk2utt" and f.name != "ctm":
            read_table(f)  # sorted, no duplicate keys: errors name the line
        rows = _keyed_lines(f) if kind is not None else []
        if kind is None or (f.name == "cmvn.scp" and _is_global_cmvn(rows, spks)):
            whole[f.name] = f.read_bytes()
            continue
        if f.name == "ctm" and rows and not all(k in uset for k, _, _ in rows) and all(k in recos for k, _, _ in rows):
            kind = "reco"
        known = {"utt": uset, "reco": recos, "spk": spks, "spk2utt": spks}[kind]
        for key, _, i in rows:
            if key not in known:
                what = {"utt": "utterance", "reco": "recording", "spk": "speaker", "spk2utt": "speaker"}[kind]
                raise PunctkitError(f"{where(f, i)}: unknown {what} '{key}' (not in {master})")
        keyed[f.name] = _Keyed(kind, [(k, ln) for k, ln, _ in rows])
    return _Contents(d, utts, utt2spk, utt2reco, keyed, whole, stream)


def split_balanced(sizes: list[int], n: int) -> list[list[int]]:
    """Indices of `sizes` cut into `n` contiguous groups whose size sums are as even as possible.

    Group j ends where the running sum is nearest j*k + min(j, r), with k, r = divmod(sum, n):
    for unit sizes this is Kaldi's split_scp.pl (the first r groups one item longer). With
    at least n items every group is non-empty; with fewer, the last groups are empty.
    """
    k, r = divmod(sum(sizes), n)
    acc = 0
    groups: list[list[int]] = [[]]
    for i, s in enumerate(sizes):
        parts_left = n - len(groups)
        end = len(groups) * k + min(len(groups), r)
        if groups[-1] and parts_left > 0 and (len(sizes) - i <= parts_left or acc + s / 2 > end):
            groups.append([])
        groups[-1].append(i)
        acc += s
    return groups + [[] for _ in range(n - len(groups))]


def _spk2utt_lines(utts: list[str], utt2spk: dict[str, str]) -> list[str]:
    spk2utt: dict[str, list[str]] = {}
    for u in utts:
        spk2utt.setdefault(utt2spk[u], []).append(u)
    return [f"{s} {' '.join(us)}" for s, us in sorted(spk2utt.items())]


def _write_part(src: _Contents, utts: list[str], out: OutputDir) -> None:
    """Write the subset of `src` for `utts` (in src order) into the part `out`."""
    keep = {"utt": set(utts), "reco": {src.utt2reco[u] for u in utts},
            "spk": {src.utt2spk[u] for u in utts}}
    for name, tab in src.keyed.items():
        if tab.kind == "spk2utt":
            out.write_lines(name, _spk2utt_lines(utts, src.utt2spk))
        else:
            out.write_lines(name, (ln for k, ln in tab.lines if k in keep[tab.kind]))
    for name, data in src.whole.items():
        out.write_bytes(name, data)


def split_data_dir(data: str | Path, n: int, per_spk: bool = False, overwrite: bool = False, *,
                   per_reco: bool = False) -> list[Path]:
    """Split a data directory into `DATA/splitN/1..N` (contiguous parts, balanced by utterance
    count); `per_spk` keeps each speaker's utterances in one part; `per_reco` each recording's
    (Kaldi's split_data.sh --per-reco): the streams `punctkit decode` reads, a recording's speaker
    turns together (where the dir names no recording, no segments or utt2reco, a speaker is one).
    Returns the part paths.

    A part is a copy of its share of DATA: a data-directory file an earlier split left
    in it that DATA no longer has is removed; files punctkit does not know are kept."""
    src = _read_contents(data)
    if n < 1:
        raise PunctkitError(f"split-data: number of parts must be at least 1, got {n}")
    if per_spk and per_reco:
        raise PunctkitError("split-data: give --per-spk or --per-reco, not both")
    if per_spk or per_reco:
        key = src.utt2spk if per_spk else src.stream
        grouped: dict[str, list[str]] = {}
        for u in src.utts:
            grouped.setdefault(key[u], []).append(u)
        units = list(grouped.values())
    else:
        units = [[u] for u in src.utts]
    if n > len(units):
        what = "speakers" if per_spk else "recordings" if per_reco else "utterances"
        raise PunctkitError(f"{src.path}: cannot split {len(units)} {what} into {n} parts")
    groups = split_balanced([len(x) for x in units], n)
    out = src.path / f"split{n}"
    names = [*src.keyed, *src.whole]
    known = (*DATA_DIR_FILES, *names)  # DATA's own files are copied into every part
    with output_dir(out, ("[0-9]*/",), overwrite=overwrite):
        for k, group in enumerate(groups, 1):
            chosen = {u for i in group for u in units[i]}
            stale = [f.name for f in (out / str(k)).glob("*") if f.name not in names]
            with output_dir(out / str(k), known, overwrite=overwrite, stale=stale) as part:
                _write_part(src, [u for u in src.utts if u in chosen], part)
    return [out / str(k) for k in range(1, n + 1)]


def _merge_keyed(name: str, parts: list[tuple[Path, _Keyed]]) -> list[str]:
    """Merge one keyed file of several directories, sorted by key (stable)."""
    kind = parts[0][1].kind
    if kind == "utt":
        owner: dict[str, Path] = {}
        rows: list[tuple[str, str]] = []
        for d, tab in parts:
            for k in dict.fromkeys(k for k, _ in tab.lines):
                if k in owner:
                    raise PunctkitError(f"combine-data: utterance '{k}' is in both {owner[k] / name} and {d / name}")
                owner[k] = d
            rows += tab.lines
        return [ln for _, ln in sorted(rows, key=lambda r: r[0])]
    blocks: dict[str, tuple[Path, list[str]]] = {}
    for d, tab in parts:
        mine: dict[str, list[str]] = {}
        for k, ln in tab.lines:
            mine.setdefault(k, []).append(ln)
        for k, lines in mine.items():
            if k in blocks and blocks[k][1] != lines:
                raise PunctkitError(f"combine-data: {blocks[k][0] / name} and {d / name} disagree about '{k}'")
            blocks.setdefault(k, (d, lines))
    return [ln for k in sorted(blocks) for ln in blocks[k][1]]


PLACING_FILES = ("segments", "ctm")  # where and when an utterance was spoken; partial in a data dir is fine


def _placed(srcs: list[_Contents]) -> dict[str, list[str]]:
    """Where some inputs place their utterances in recordings (`segments`, `utt2reco`) and others do not, or not
    with the same files: the combination keeps it, `utt2reco` for every utterance (an input's own, else its
    segments' recordings, else its `utt2spk`: a text directory's document, the stream it is read as alone),
    `segments` and `ctm` of the inputs that have them (an utterance without lines: its times unknown, as
    data/timing.py reads it). Else nothing."""
    segs, recos = [("segments" in s.keyed) for s in srcs], [("utt2reco" in s.keyed) for s in srcs]
    if (all(recos) or not any(recos)) and (all(segs) or not any(segs)):
        return {}  # every input has the same of the two files (or none has either): merged as any other file
    rows = []
    for s in srcs:
        placed = "segments" in s.keyed or "utt2reco" in s.keyed
        rows += [(u, f"{u} {s.utt2reco[u] if placed else s.utt2spk.get(u, u)}") for u in s.utts]
    files = {"utt2reco": [ln for _, ln in sorted(rows, key=lambda r: r[0])]}
    for name in PLACING_FILES:
        parts = [(s.path, s.keyed[name]) for s in srcs if name in s.keyed]
        if parts:
            files[name] = _merge_keyed(name, parts)
    return files


def combine_data_dirs(out: str | Path, dirs: list[str | Path], overwrite: bool = False) -> list[str]:
    """Merge data directories into `out` (every file sorted by key; spk2utt regenerated).
    Returns warnings about files left out because not every input has them (or agrees).
    `out` is written as by `write_data_dir` (it may not be one of `dirs`)."""
    if not dirs:
        raise PunctkitError("combine-data: no input directories")
    srcs = [_read_contents(d) for d in dirs]
    warnings: list[str] = []
    names = sorted({n for s in srcs for n in [*s.keyed, *s.whole]})
    utts = sorted({u for s in srcs for u in s.utts})
    utt2spk = {u: spk for s in srcs for u, spk in s.utt2spk.items()}
    files: dict[str, list[str] | bytes] = _placed(srcs)  # made before any is written: an error leaves `out` as it was
    for name in names:
        if name in files:
            continue
        missing = [str(s.path) for s in srcs if name not in s.keyed and name not in s.whole]
        if missing:
            warnings.append(f"'{name}' left out: not in {', '.join(missing)}")
            continue
        shapes = {name in s.whole for s in srcs}
        if len(shapes) > 1:  # cmvn.scp: global stats in some inputs, per speaker in others
            warnings.append(f"'{name}' left out: global in some inputs, keyed by speaker in others")
            continue
        if name in srcs[0].whole:
            datas = [s.whole.get(name) for s in srcs]
            if any(x != datas[0] for x in datas):
                if name in MUST_AGREE:
                    raise PunctkitError(f"combine-data: '{name}' differs between the input directories")
                warnings.append(f"'{name}' left out: it differs between the inputs")
                continue
            files[name] = datas[0]  # type: ignore[assignment]
        elif srcs[0].keyed[name].kind == "spk2utt":
            files[name] = _spk2utt_lines(utts, utt2spk)
        else:
            kinds = {s.keyed[name].kind for s in srcs}
            if len(kinds) > 1:
                raise PunctkitError(f"combine-data: '{name}' is keyed by utterance in some inputs "
                                    f"and by recording in others")
            files[name] = _merge_keyed(name, [(s.path, s.keyed[name]) for s in srcs])
    known = (*DATA_DIR_FILES, *names)  # the inputs' files are copied
    with output_dir(out, known, overwrite=overwrite, inputs=dirs, stale=DATA_DIR_STALE) as o:
        for name, data in files.items():
            if isinstance(data, bytes):
                o.write_bytes(name, data)
            else:
                o.write_lines(name, data)
    return warnings
