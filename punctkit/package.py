"""Packed model files (`punctkit pack`): writing them, and reading them without trusting them.

A packed model (`model.pkt`) is a zip archive that needs nothing else to run:

- `punctkit.json`: format name and version, punctkit version, the card
  (model type, frontend, inventory, checkpoint, training data, test figures);
- `config.yaml`: the resolved training config; a pre-trained LM named by path
  (`plm: auto` or a directory) is replaced by its `config.json` contents
  (`plm: {config: {...}}`) so the model is rebuilt offline and the packed
  weights fill it;
- `frontend/`: the frontend directory (vocabulary, BPE codes, sentencepiece
  model or PLM tokenizer files);
- `model.pt`: the state dict of the chosen checkpoint (tensors only: loaded with
  `weights_only=True`);
- `model.onnx` (optional, `punctkit pack --onnx`): the same tagger as an ONNX
  graph, run by onnxruntime without importing torch (punctkit/onnx.py). A package
  packed with `--onnx-only` has it instead of `model.pt` (smaller; onnxruntime only).

An ensemble package (`punctkit pack --ensemble EXP1 EXP2 ...`) holds one such model
per member under `models/K/` (K = 0, 1, ...: `models/0/config.yaml`, `models/0/model.pt`,
`models/0/frontend/...`, each with its own `punctkit.json`), and at the top only its
`punctkit.json` (kind `ensemble`, the weights, a card listing the members); `read_package`
returns it as an `EnsemblePackage`, every member validated like a single model.

A package is read, not trusted (`read_package`): only the member names a package
of its frontend kind can hold are accepted (`allowed_members`); absolute names,
`..`, backslashes, links, duplicates and unknown members are refused, and so are
sizes over `LIMITS`/`TOTAL_LIMIT` or a compression ratio over `MAX_RATIO`, both as
declared by the zip and as counted while reading. Frontend files are written only
into a private temporary directory, by the validated names, and removed once read.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from punctkit import __version__
from punctkit.archive import FRONTEND_LIMIT, TOTAL_LIMIT, WEIGHTS_LIMIT, MiB, file_type, size_problem, unsafe_name
from punctkit.data.case_prior import CasePrior
from punctkit.data.labels import CaseLexicon
from punctkit.pretrained import model_path
from punctkit.config import check_model_section
from punctkit.decode.options import OPTIONS_FILE, SEARCH_KEYS, read_options, resolve
from punctkit.files import PunctkitError, atomic_write, parse_json, parse_yaml, require_file
from punctkit.score import read_score
from punctkit.text.frontend import CONF_FILE, Frontend, load_frontend
from punctkit.text.plm import TOKENIZER_DIR
from punctkit.text.plm_tokenizer import TOKENIZER_FILES

FORMAT_NAME = "punctkit-model"
FORMAT_VERSION = 1
MANIFEST = "punctkit.json"
FRONTEND = "frontend/"

META_LIMIT = 4 * MiB           # punctkit.json, config.yaml, frontend/frontend.yaml
LIMITS = {MANIFEST: META_LIMIT, "config.yaml": META_LIMIT, FRONTEND + CONF_FILE: META_LIMIT,
          "model.pt": WEIGHTS_LIMIT, "model.onnx": WEIGHTS_LIMIT}
REQUIRED = (MANIFEST, "config.yaml", FRONTEND + CONF_FILE)  # and model.pt or model.onnx (or both)
WEIGHTS = ("model.pt", "model.onnx")
CHUNK = 4 * MiB

# The files each frontend kind writes into its directory (punctkit/text/frontend.py, plm.py).
PLM_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
             "merges.txt") + TOKENIZER_FILES
# Any kind may hold the case lexicon and the case prior of true-case models (punctkit.data.labels.CaseLexicon,
# punctkit.data.case_prior.CasePrior).
CASE_FILES = (CaseLexicon.FILE, CasePrior.FILE)
FRONTEND_FILES: dict[str, tuple[str, ...]] = {
    "word": ("vocab.txt", *CASE_FILES),
    "subword_nmt": ("bpe.codes", "vocab.txt", *CASE_FILES),
    "sentencepiece": ("spm.model", *CASE_FILES),
    "plm": tuple(f"{TOKENIZER_DIR}/{n}" for n in PLM_FILES) + CASE_FILES,
}
DIRS = (FRONTEND, f"{FRONTEND}{TOKENIZER_DIR}/")  # directory entries a re-zipped package may have
KNOWN = set(LIMITS) | {FRONTEND + n for files in FRONTEND_FILES.values() for n in files}  # of any kind
MODELS = "models/"  # an ensemble's members: models/0/..., models/1/...
MAX_MEMBERS = 16
ENSEMBLE = "ensemble"  # the manifest `kind` of an ensemble package


def member_prefix(k: int) -> str:
    """Where member k of an ensemble package keeps its files."""
    return f"{MODELS}{k}/"


def split_member(name: str) -> tuple[str, str]:
    """(`models/K/`, the name inside member K) for an ensemble member's file, else ('', name)."""
    m = re.fullmatch(r"models/(0|[1-9][0-9]?)/(.*)", name, re.DOTALL)
    if m and int(m.group(1)) < MAX_MEMBERS:
        return member_prefix(int(m.group(1))), m.group(2)
    return "", name


def is_dir_entry(name: str) -> bool:
    """A directory entry a re-zipped package may hold (they are skipped)."""
    prefix, inner = split_member(name)
    return name in DIRS or name == MODELS or bool(prefix) and (inner == "" or inner in DIRS)


# ------------------------------------------------------------------ pack

def _offline_model_conf(model_conf: dict[str, Any], frontend_dir: Path) -> dict[str, Any]:
    """The model section with a PLM path replaced by its config.json (`plm: {config: ...}`)."""
    from punctkit.expdir import offline_model_conf

    return offline_model_conf(model_conf, frontend_dir)


def _train_data(exp: Path) -> str | None:
    """`TRAIN (dev DEV)` from the first line of train.log that names them."""
    log = exp / "train.log"
    if not log.is_file():
        return None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.search(r"punctkit train: (.+?) -> ", line)
        if m:
            return m.group(1)
    return None


def _results(path: Path) -> dict[str, Any]:
    """Overall P/R/F1 (and SER) from a `score.json` written by `punctkit score -o`, with the
    decoding options behind it (`decoding_of`)."""
    res = read_score(path)
    overall = res["overall"]
    out = {k: overall[k] for k in ("precision", "recall", "f1") if k in overall}
    if "SER" in res:
        out["SER"] = res["SER"]
    out["source"] = str(path)
    opts = decoding_of(path)
    if opts is not None:
        out["decode"] = opts
    return out


CARD_DECODE = ("window", "step", "beam")


def decoding_of(score_json: Path) -> dict[str, Any] | None:
    """The window, step and beam a scored hypothesis was decoded with: the decode_options.yaml
    beside `score_json` (the recipe copies it there) or in its `hyp/`; None when neither exists."""
    for p in (score_json.parent / OPTIONS_FILE, score_json.parent / "hyp" / OPTIONS_FILE):
        if p.is_file():
            opts = read_options(p).search()
            return {k: opts[k] for k in CARD_DECODE}
    return None


def quoted_decoding(card_results: list[Path]) -> dict[str, Any] | None:
    """The decoding behind the scores a card quotes (one setting for all; an error when they
    differ), which the package then decodes with; None when no score records its options."""
    found = {str(p): d for p in card_results if (d := decoding_of(p)) is not None}
    if len({tuple(sorted(d.items())) for d in found.values()}) > 1:
        raise PunctkitError("--card-results: the scores were decoded with different settings ("
                            + "; ".join(f"{p}: {d}" for p, d in found.items()) + "); quote one setting")
    return next(iter(found.values()), None)


# An absolute path inside a card's text: POSIX (`/home/...`: a `/` that starts a word, not one inside a
# URL, a fraction or `a/b`), a Windows drive (`C:\\...`) or a UNC share (`\\\\host\\...`).
ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/\\-])(?:/|[A-Za-z]:[\\/]|\\\\)[^\s\"'<>|;,(){}\[\]]+")


def card_paths(value: Any, bases: Iterable[Path] = ()) -> Any:
    """`value` (a card, or any of its entries) with every absolute path in its text made relative: to
    the first of `bases` it lies under (never the filesystem root), else its last component, so that
    a card names no directory of the machine that packed it (`/home/USER/...`). Used when a card is
    made (bases: the working directory, the experiment's parent) and when one is served."""
    if isinstance(value, dict):
        return {k: card_paths(v, bases) for k, v in value.items()}
    if isinstance(value, list):
        return [card_paths(v, bases) for v in value]
    if not isinstance(value, str):
        return value
    roots = [b for b in (Path(os.path.abspath(b)) for b in bases) if b != Path(b.anchor)]

    def relative(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith("/"):
            path = Path(os.path.normpath(text))
            for root in roots:
                if path.is_relative_to(root) and path != root:
                    return path.relative_to(root).as_posix()
        return re.split(r"[\\/]", text.rstrip("\\/"))[-1] or "."

    return ABSOLUTE_PATH.sub(relative, value)


def make_card(exp: Path, conf: dict[str, Any], checkpoint: Path, card_results: list[Path],
              train_data: str | None, notes: dict[str, str] | None = None) -> dict[str, Any]:
    """The short description stored with a packed model; `notes`: more entries (`pack --card-note
    KEY=TEXT`: the command that rebuilds it, the training data's licence, ...), never over a built-in one."""
    card: dict[str, Any] = {
        "name": exp.resolve().name,
        "model": conf["model"].get("type"),
        "frontend": conf["frontend"].get("kind", "word"),
        "inventory": conf["resolved"]["inventory"],
        "checkpoint": checkpoint.name,
        "training_data": train_data or _train_data(exp),
        "decode": {k: conf["decode"][k] for k in CARD_DECODE if k in conf["decode"]},
    }
    distill = (conf.get("train") or {}).get("distill") or {}
    if isinstance(distill, dict) and distill.get("probs"):  # a student names its teacher's labels
        card["distilled_from"] = {k: distill[k] for k in ("probs", "weight", "temperature") if k in distill}
    from punctkit.expdir import training_history

    try:  # history.json, or the last epoch checkpoint's record when a kill left history.json behind it
        h = training_history(exp)
        if h is not None:
            card["epochs"] = len(h)
            scores = [e["valid_f1"] for e in h if e.get("valid_f1") is not None]
            card["best_dev_f1"] = max(scores) if scores else None
    except (PunctkitError, TypeError, KeyError, AttributeError):
        pass  # a history that cannot be read gives the card no epochs
    card["results"] = {p.parent.name: _results(p) for p in card_results}
    for key, text in (notes or {}).items():
        if key in card:
            raise PunctkitError(f"--card-note {key}: the card's own entry; name the note otherwise")
        card[key] = text
    return card_paths(card, [Path.cwd(), exp.parent])  # no absolute path of this machine on the card


def model_files(exp_dir: str | Path, checkpoint: str | None = None, card_results: Iterable[str | Path] = (),
                train_data: str | None = None, onnx: bool = False, int8: bool = False,
                quote: bool = True, onnx_only: bool = False,
                notes: dict[str, str] | None = None) -> tuple[dict[str, Any], list[tuple[str, bytes, int]]]:
    """The manifest and the (name, bytes, compression) members of one trained model's package.

    `onnx` adds the tagger as an ONNX graph (punctkit/onnx.py), checked against torch;
    `int8` stores that graph with int8 weights; `onnx_only`: the graph without model.pt.
    `quote`: the package decodes with the settings behind the quoted `card_results`
    (else they are only listed on the card).
    """
    onnx = onnx or onnx_only
    if int8 and not onnx:
        raise PunctkitError("--int8 is the ONNX graph's weight type: add --onnx")
    import torch

    from punctkit.expdir import find_checkpoint, load_model
    exp = Path(exp_dir)
    model, frontend, _, conf = load_model(exp, checkpoint)
    ckpt = find_checkpoint(exp, checkpoint)  # its name goes on the card
    fe_dir = exp / "frontend"
    require_file(fe_dir / CONF_FILE, "frontend description")
    conf = dict(conf, model=_offline_model_conf(conf["model"], fe_dir))
    results = [Path(p) for p in card_results]
    quoted = quoted_decoding(results) if quote else None
    if quoted is not None:  # the package decodes as its quoted scores were decoded
        conf["decode"] = {**conf["decode"], **quoted}
    manifest = {
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION, "punctkit_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "card": make_card(exp, conf, ckpt, results, train_data, notes),
    }
    graph = None
    if onnx:
        from punctkit.onnx import export_onnx, quantize_graph

        graph = export_onnx(model, frontend.vocab_size, frontend.pad_id)
        if int8:
            graph = quantize_graph(graph)
        manifest["card"]["onnx"] = ("int8" if int8 else "float32") + (" only (no torch weights)" if onnx_only else "")
    weights = io.BytesIO()
    torch.save(model.state_dict(), weights)
    allowed = set(allowed_members(frontend.kind))
    files = [(MANIFEST, json.dumps(manifest, indent=1).encode(), zipfile.ZIP_DEFLATED),
             ("config.yaml", yaml.safe_dump(conf, sort_keys=False).encode(), zipfile.ZIP_DEFLATED)]
    for p in sorted(fe_dir.rglob("*")):
        name = FRONTEND + p.relative_to(fe_dir).as_posix()
        if p.is_file() and name in allowed:  # what read_package accepts (no editor backups, ...)
            files.append((name, p.read_bytes(), zipfile.ZIP_DEFLATED))
    if not onnx_only:
        files.append(("model.pt", weights.getvalue(), zipfile.ZIP_STORED))
    if graph is not None:
        files.append(("model.onnx", graph, zipfile.ZIP_STORED))
    return manifest, files


def is_package_file(path: Path) -> bool:
    """Whether `path` is a zip holding punctkit's manifest (a package `pack` may replace)."""
    try:
        with zipfile.ZipFile(path) as z:
            return MANIFEST in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


@dataclass(frozen=True)
class Packed:
    """A package's members, ready to write: its manifest, its files (name, bytes, zip compression)
    and the backends it can run with (each checked by loading the file back before the rename)."""

    manifest: dict[str, Any]
    files: list[tuple[str, bytes, int]]
    backends: tuple[str, ...]


@contextlib.contextmanager
def writing(out: str | Path, packed: Packed) -> Iterator[Path]:
    """Write `packed` into `out` atomically: the zip is complete under a temporary name when this
    yields it (load it back there), and replaces `out` only when the block ends without an error;
    an existing `out` is replaced only if it is a package (punctkit never overwrites a file it did not write)."""
    p = Path(out)
    if p.is_dir():
        raise PunctkitError(f"{p}: is a directory; give the package's file name (e.g. {p / 'model.pkt'})")
    if p.is_file() and not is_package_file(p):
        raise PunctkitError(f"{p}: exists and is not a punctkit package; choose another name or move it away")
    with atomic_write(out, "wb") as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data, compress in packed.files:
                info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
                info.compress_type = compress
                info.external_attr = 0o644 << 16
                z.writestr(info, data)
        f.flush()
        yield Path(f.name)


def model_package(exp_dir: str | Path, checkpoint: str | None = None,
                  card_results: Iterable[str | Path] = (), train_data: str | None = None,
                  onnx: bool = False, int8: bool = False, onnx_only: bool = False,
                  notes: dict[str, str] | None = None) -> Packed:
    """The package of a trained model dir (`punctkit pack`; punctkit/packing.py writes it).

    `onnx` adds the tagger as an ONNX graph (punctkit/onnx.py), checked against torch;
    `int8` stores that graph with int8 weights (faster on CPU; labels may differ slightly);
    `onnx_only`: the graph alone, without model.pt (a smaller file that onnxruntime runs);
    `notes`: more entries for the card (`make_card`).
    """
    manifest, files = model_files(exp_dir, checkpoint, card_results, train_data, onnx, int8, onnx_only=onnx_only,
                                  notes=notes)
    return Packed(manifest, files, ("onnx",) if onnx_only else ("torch", "onnx") if onnx else ("torch",))


def member_scores(exp: Path) -> list[Path]:
    """The scores a member's card quotes: EXP/decode_*/score.json (written by `punctkit score -o`)."""
    return sorted(exp.glob("decode_*/score.json"))


def ensemble_package(exp_dirs: list[str | Path], weights: list[float],
                     checkpoint: str | None = None, card_results: Iterable[str | Path] = (),
                     onnx: bool = False, int8: bool = False) -> Packed:
    """Several trained models as one ensemble package (members `models/K/`, `weights` summing
    to 1); the card lists each member (its experiment, model, checkpoint and the test figures of
    its EXP/decode_*/score.json) and the weights; `card_results`: the ensemble's own scores."""
    if not 1 <= len(exp_dirs) <= MAX_MEMBERS:
        raise PunctkitError(f"an ensemble package holds 1 to {MAX_MEMBERS} models, not {len(exp_dirs)}")
    if len(weights) != len(exp_dirs):
        raise PunctkitError(f"--weights: {len(weights)} weights for {len(exp_dirs)} models; give one per model")
    files: list[tuple[str, bytes, int]] = []
    members = []
    for k, exp in enumerate(exp_dirs):
        manifest, mine = model_files(exp, checkpoint, member_scores(Path(exp)), None, onnx, int8, quote=False)
        members.append(dict(manifest["card"], exp=str(exp)))
        files += [(member_prefix(k) + name, data, compress) for name, data, compress in mine]
    inventories = {m["inventory"] for m in members}
    if len(inventories) > 1:
        a, b = members[0], next(m for m in members if m["inventory"] != members[0]["inventory"])
        raise PunctkitError(f"{a['exp']} (inventory {a['inventory']}) and {b['exp']} (inventory {b['inventory']}) "
                            f"label different marks: the models of an ensemble must share one inventory")
    card = {"model": ENSEMBLE, "inventory": members[0]["inventory"], "weights": weights, "members": members,
            "results": {Path(p).parent.name: _results(Path(p)) for p in card_results}}
    card = card_paths(card, [Path.cwd(), *(Path(e).parent for e in exp_dirs)])  # no absolute path of this machine
    top = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "punctkit_version": __version__,
           "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "kind": ENSEMBLE, "weights": weights, "card": card}
    files.insert(0, (MANIFEST, json.dumps(top, indent=1).encode(), zipfile.ZIP_DEFLATED))
    return Packed(top, files, ("torch", "onnx") if onnx else ("torch",))


# ------------------------------------------------------------------ read and validate

@dataclass(frozen=True)
class DeferredMember:
    """A member whose header `check_entries` has validated, read (and CRC-checked) only when a
    backend asks for it: the ONNX backend never reads model.pt."""

    path: Path
    info: zipfile.ZipInfo

    def read(self) -> bytes:
        """The member's bytes; a package changed since it was opened is a one-line error."""
        try:
            with zipfile.ZipFile(self.path) as z:
                info = z.getinfo(self.info.filename)
                if (info.file_size, info.CRC, info.header_offset) != \
                        (self.info.file_size, self.info.CRC, self.info.header_offset):
                    raise _bad(self.path, f"changed since it was opened ({self.info.filename}): load it again")
                return read_member(self.path, z, info)
        except PunctkitError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError, KeyError) as e:
            raise _bad(self.path, f"corrupt packed model ({type(e).__name__} reading {self.info.filename})") from None


@dataclass
class Package:
    """The parts of a packed model file (weights still serialized: each backend reads its own)."""

    path: Path
    manifest: dict[str, Any]
    conf: dict[str, Any]
    frontend: Frontend
    weights_member: bytes | DeferredMember | None  # model.pt (torch state dict), read on first use; None: ONNX only
    onnx: bytes | None = None    # model.onnx, when packed with --onnx
    frontend_digest: str = ""    # sha256 over the frontend's files: equal digests tokenize alike

    @property
    def weights(self) -> bytes:
        """model.pt's bytes (the torch backend's weights)."""
        if self.weights_member is None:
            raise _bad(self.path, "holds the ONNX graph only (packed with --onnx-only): run it with "
                                  "onnxruntime (--backend onnx or auto; pip install onnxruntime)")
        if isinstance(self.weights_member, DeferredMember):
            self.weights_member = self.weights_member.read()
        return self.weights_member


@dataclass
class EnsemblePackage:
    """An ensemble package: its top manifest, each member as a Package, the weights (sum 1)."""

    path: Path
    manifest: dict[str, Any]
    members: list[Package]
    weights: list[float]


def allowed_members(kind: str) -> tuple[str, ...]:
    """Every member name a package whose frontend is of `kind` may hold."""
    if kind not in FRONTEND_FILES:
        raise PunctkitError(f"unknown frontend kind '{kind}' (known: {', '.join(sorted(FRONTEND_FILES))})")
    return tuple(LIMITS) + tuple(FRONTEND + n for n in FRONTEND_FILES[kind])


def _bad(path: Path, why: str) -> PunctkitError:
    return PunctkitError(f"{path}: {why}")


def _refuse(path: Path, name: str, why: str) -> PunctkitError:
    """The one-line error for a member; the name is quoted with escapes (no newline can reach the terminal)."""
    shown = repr(name if len(name) <= 200 else name[:200] + "...")
    return PunctkitError(f"{path}: member {shown} refused: {why} (punctkit reads only what `punctkit pack` writes)")


def limit_of(name: str) -> int:
    """The largest uncompressed size accepted for member `name` (an ensemble member's file: as in one model)."""
    return LIMITS.get(split_member(name)[1], FRONTEND_LIMIT)


def check_entries(path: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Names, types, duplicates, declared sizes and compression ratios of every member (nothing read)."""
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        why = unsafe_name(name) or file_type(info)
        if why is None and name in seen:
            why = "a duplicate name"
        if why is None and split_member(name)[1] not in KNOWN and not is_dir_entry(name):
            why = f"not a file of a punctkit package (known: {', '.join(LIMITS)} and a frontend's files)"
        if why is None:
            why = size_problem(info, limit_of(name))
        if why is not None:
            raise _refuse(path, name, why)
        seen.add(name)
        total += info.file_size
        if total > TOTAL_LIMIT:
            raise _refuse(path, name, f"members total over {TOTAL_LIMIT} bytes uncompressed")


def read_member(path: Path, z: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The member's bytes, read in bounded chunks; its size must be the one its header declares."""
    limit = min(info.file_size, limit_of(info.filename))
    data = bytearray()
    try:
        with z.open(info) as f:
            while True:
                chunk = f.read(min(CHUNK, limit + 1 - len(data)))
                if not chunk:
                    break
                data += chunk
                if len(data) > limit:
                    raise _refuse(path, info.filename, f"holds more than the {info.file_size} bytes its header declares")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError, NotImplementedError) as e:
        why = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        raise _refuse(path, info.filename, f"its data does not match its header ({why})") from None
    if len(data) != info.file_size:
        raise _refuse(path, info.filename, f"holds {len(data)} bytes, not the {info.file_size} its header declares")
    return bytes(data)


def _json(path: Path, name: str, raw: bytes) -> Any:
    """A JSON member's data; not JSON (nested past the parser's depth included) is a one-line error."""
    try:
        return parse_json(raw.decode("utf-8"))  # the one JSON reader (files.json_data)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, an int of 5000 digits
        raise _bad(path, f"corrupt packed model ({name} is not JSON)") from None


def _manifest(path: Path, raw: bytes) -> dict[str, Any]:
    """The checked punctkit.json: this format and version, its card (if any) a mapping."""
    manifest = _json(path, MANIFEST, raw)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise _bad(path, "not a packed punctkit model (unknown format)")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise _bad(path, f"packed model format version {repr(version)[:40]}, this punctkit "
                         f"({__version__}) reads version {FORMAT_VERSION}: pack it again")
    if not isinstance(manifest.get("card", {}), dict):
        raise _bad(path, f"corrupt packed model ({MANIFEST}: its card is not a mapping)")
    return manifest


def _yaml(path: Path, name: str, raw: bytes) -> Any:
    """A YAML member's plain data (`parse_yaml`); one-line errors name the package and the member."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(path, f"corrupt packed model ({name}: byte 0x{raw[e.start]:02x} at offset {e.start} "
                         f"is not UTF-8)") from None
    return parse_yaml(text, f"{path} ({name})")


TOKENIZER_CONFIG = f"{FRONTEND}{TOKENIZER_DIR}/tokenizer_config.json"


def local_files_only(data: bytes) -> bytes:
    """A tokenizer_config.json without its top-level `*_file` entries (`vocab_file`, `tokenizer_file`:
    paths that older transformers read instead of the files beside it); other bytes as they are."""
    try:
        conf = parse_json(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return data  # not JSON: the tokenizer refuses it in one line
    if not isinstance(conf, dict) or not any(k.endswith("_file") for k in conf):
        return data
    return json.dumps({k: v for k, v in conf.items() if not k.endswith("_file")}).encode()


def _frontend(path: Path, members: dict[str, bytes], fe_conf: Any, prefix: str = "") -> Frontend:
    """The frontend, from its members written into a private temporary directory by validated names
    (`prefix`: the member's place in an ensemble package, for messages)."""
    kind = fe_conf.get("kind", "word") if isinstance(fe_conf, dict) else None
    if not isinstance(kind, str):
        raise _bad(path, f"corrupt packed model ({prefix}{FRONTEND}{CONF_FILE} has no frontend kind)")
    try:
        allowed = set(allowed_members(kind))
    except PunctkitError as e:
        raise _bad(path, str(e)) from None
    for name in members:
        if name not in allowed:
            raise _refuse(path, prefix + name, f"not a file of a '{kind}' frontend (known: "
                                      f"{', '.join(FRONTEND_FILES[kind])})")
    if kind == "plm" and not any(n.startswith(f"{FRONTEND}{TOKENIZER_DIR}/") for n in members):
        # without them the frontend would load the tokenizer from the path in frontend.yaml, outside the package
        raise _bad(path, f"incomplete packed model (no {prefix}{FRONTEND}{TOKENIZER_DIR}/ tokenizer files)")
    tmp = Path(tempfile.mkdtemp(prefix="punctkit-package-"))
    try:
        for name, data in members.items():
            if name.startswith(FRONTEND):
                target = tmp.joinpath(*name.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "xb") as f:
                    f.write(local_files_only(data) if name == TOKENIZER_CONFIG else data)
        return load_frontend(tmp / FRONTEND.rstrip("/"))
    except PunctkitError as e:  # named by member, not by the temporary directory that held it
        raise _bad(path, str(e).replace(f"{tmp}{os.sep}", prefix)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_package(path: str | Path) -> Package | EnsemblePackage:
    """A packed model's manifest, config, frontend and weights (an ensemble package's: each
    member's), every member validated first; one-line errors for foreign, hostile, truncated,
    corrupt or other-version files."""
    p = require_file(model_path(path), "packed model")  # a shipped model's name (`fast`) is its package
    if not zipfile.is_zipfile(p):
        raise _bad(p, "not a packed punctkit model (truncated, or not written by `punctkit pack`)")
    try:
        with zipfile.ZipFile(p) as z:
            check_entries(p, z.infolist())
            members = {i.filename: DeferredMember(p, i) if split_member(i.filename)[1] == "model.pt"
                       else read_member(p, z, i) for i in z.infolist() if not is_dir_entry(i.filename)}
    except PunctkitError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError, KeyError) as e:
        raise _bad(p, f"corrupt packed model ({type(e).__name__})") from None
    if MANIFEST not in members:
        raise _bad(p, f"not a packed punctkit model (no {MANIFEST})")
    manifest = _manifest(p, members[MANIFEST])
    if manifest.get("kind") == ENSEMBLE:
        return _ensemble(p, manifest, members)
    for name in members:
        if split_member(name)[0]:
            raise _refuse(p, name, "an ensemble member in a single-model package")
    return _model(p, manifest, members)


def _model(p: Path, manifest: dict[str, Any], members: dict[str, bytes], prefix: str = "") -> Package:
    """One model from its members (names inside the model; `prefix`: its place in an ensemble)."""
    missing = [prefix + n for n in REQUIRED if n not in members]
    if not any(n in members for n in WEIGHTS):
        missing.append(prefix + " or ".join(WEIGHTS))
    if missing:
        raise _bad(p, f"incomplete packed model (missing {', '.join(missing)})")
    fe_name = FRONTEND + CONF_FILE
    frontend = _frontend(p, members, _yaml(p, prefix + fe_name, members[fe_name]), prefix)
    conf = _config(p, members, prefix, frontend)
    return Package(p, manifest, conf, frontend, members.get("model.pt"), members.get("model.onnx"),
                   frontend_digest(members))


def _config(p: Path, members: dict[str, Any], prefix: str, frontend: Frontend) -> dict[str, Any]:
    """One model's config.yaml, checked as far as a package is built from it: a `model` section with
    its type (`check_model_section`) and its encoder from the package (`_own_encoder`), a `resolved`
    one with the inventory and `env` (`_env_fits` the frontend), a `decode` mapping ({} when absent)
    whose window, step, batch size and beam decoding can use."""
    name = prefix + "config.yaml"
    conf = _yaml(p, name, members["config.yaml"])
    if not isinstance(conf, dict) or not isinstance(conf.get("resolved"), dict) or \
            not isinstance(conf.get("model"), dict):
        raise _bad(p, f"corrupt packed model ({name} has no model/resolved sections)")
    check_model_section(conf["model"], f"{p}: {name}")
    for what, ok in (("resolved inventory", isinstance(conf["resolved"].get("inventory"), str)),
                     ("resolved env", _env_fits(conf["resolved"].get("env"), frontend)),
                     ("decode section", isinstance(conf.setdefault("decode", {}), dict))):
        if not ok:
            raise _bad(p, f"corrupt packed model ({name}: its {what} is not what punctkit pack writes)")
    try:
        resolve(trained={k: v for k, v in conf["decode"].items() if k in SEARCH_KEYS})
    except PunctkitError as e:
        raise _bad(p, f"corrupt packed model ({name}: {e})") from None
    conf["model"] = _own_encoder(p, members, prefix, conf["model"])
    return conf


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _env_fits(env: Any, frontend: Frontend) -> bool:
    """Whether `resolved.env` holds what training recorded for building the model: the frontend's
    vocabulary size, the number of labels, the padding id, a feature dimension or null, an
    embedding table's [rows, dim] (within the weights' limit) or null, each named by text."""
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        return False
    shape, feat_dim = env.get("embeddings_shape"), env.get("feat_dim")
    return (env.get("vocab_size") == frontend.vocab_size and _whole(env.get("n_labels"), 1)
            and _whole(env.get("pad_id"), 0) and (feat_dim is None or _whole(feat_dim, 1))
            and (shape is None or isinstance(shape, list) and len(shape) == 2 and all(_whole(n, 1) for n in shape)
                 and shape[0] * shape[1] * 4 <= WEIGHTS_LIMIT))


def _own_encoder(p: Path, members: dict[str, Any], prefix: str, model: dict[str, Any]) -> dict[str, Any]:
    """The model section with its pre-trained encoder from the package, never from a directory the
    config names: `plm: {config: ...}` (what pack writes) as it is; another `plm` (a path, `auto`) is
    replaced by the package's own frontend/plm/config.json, and is a one-line error without one."""
    spec = model.get("plm")
    if spec is None or isinstance(spec, dict) and isinstance(spec.get("config"), dict):
        return model
    own = f"{FRONTEND}{TOKENIZER_DIR}/config.json"
    if own not in members:
        raise _bad(p, f"{prefix}config.yaml: model plm {repr(spec)[:80]} names an encoder outside the package, "
                      f"which holds no {prefix}{own} to build it from (pack it again)")
    plm = _json(p, prefix + own, members[own])
    if not isinstance(plm, dict):
        raise _bad(p, f"corrupt packed model ({prefix}{own} is not a mapping)")
    return dict(model, plm={"config": plm})


def frontend_digest(members: dict[str, Any]) -> str:
    """sha256 over the names and bytes of one model's frontend members (names inside the model)."""
    h = hashlib.sha256()
    for name in sorted(n for n in members if n.startswith(FRONTEND)):
        h.update(name.encode("utf-8") + b"\0" + len(members[name]).to_bytes(8, "big") + members[name])
    return h.hexdigest()


def _ensemble(p: Path, manifest: dict[str, Any], members: dict[str, bytes]) -> EnsemblePackage:
    """The members `models/0/` ... `models/N-1/` of an ensemble package, N the number of its weights."""
    weights = manifest.get("weights")
    if (not isinstance(weights, list) or not 1 <= len(weights) <= MAX_MEMBERS
            or any(not isinstance(w, (int, float)) or isinstance(w, bool) or not 0 <= w <= 1 for w in weights)
            or abs(sum(weights) - 1) > 1e-6):
        raise _bad(p, f"corrupt ensemble package ({MANIFEST}: 'weights' is not 1 to {MAX_MEMBERS} "
                      f"numbers in [0, 1] summing to 1)")
    groups: dict[str, dict[str, bytes]] = {member_prefix(k): {} for k in range(len(weights))}
    for name, data in members.items():
        if name == MANIFEST:
            continue
        prefix, inner = split_member(name)
        if prefix not in groups:
            raise _refuse(p, name, f"not a member of this ensemble of {len(weights)} models "
                                   f"({MODELS}0/ to {member_prefix(len(weights) - 1)})")
        groups[prefix][inner] = data
    models = []
    for prefix, files in groups.items():
        if MANIFEST not in files:
            raise _bad(p, f"incomplete ensemble package (no {prefix}{MANIFEST})")
        models.append(_model(p, _manifest(p, files[MANIFEST]), files, prefix))
    return EnsemblePackage(p, manifest, models, [float(w) for w in weights])
