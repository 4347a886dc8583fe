"""Reading packages without trusting them: every member's name, type, size and compression checked
before anything is read (`check_entries`), bounded reads, and the model's frontend and config rebuilt
from the validated members (`read_package`)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punctkit import __version__
from punctkit.archive import TOTAL_LIMIT, WEIGHTS_LIMIT, file_type, size_problem, unsafe_name
from punctkit.config import check_model_section
from punctkit.data.labels import get_inventory
from punctkit.decode.boundary import BoundaryFusion
from punctkit.decode.options import SEARCH_KEYS, resolve
from punctkit.files import PunctkitError, parse_json, parse_yaml, require_file
from punctkit.package.format import (
    BOUNDARY,
    ENSEMBLE,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRONTEND,
    FRONTEND_FILES,
    KNOWN,
    LIMITS,
    MANIFEST,
    MAX_MEMBERS,
    MODELS,
    REQUIRED,
    WEIGHTS,
    allowed_members,
    is_dir_entry,
    limit_of,
    member_prefix,
    split_member,
)
from punctkit.pretrained import model_path
from punctkit.text.frontend import CONF_FILE, Frontend, load_frontend
from punctkit.text.plm import TOKENIZER_DIR


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
    boundary: BoundaryFusion | None = None  # boundary.json: how turns and pauses weigh (decode/boundary.py)

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


def _bad(path: Path, why: str) -> PunctkitError:
    return PunctkitError(f"{path}: {why}")


def _refuse(path: Path, name: str, why: str) -> PunctkitError:
    """The one-line error for a member; the name is quoted with escapes (no newline can reach the terminal)."""
    shown = repr(name if len(name) <= 200 else name[:200] + "...")
    return PunctkitError(f"{path}: member {shown} refused: {why} (punctkit reads only what `punctkit pack` writes)")


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
    """The member's bytes, at most one more than its header declares (and its kind allows) read
    in one call, so memory stays bounded by the limit; its size must be the one its header declares.
    (One read, not chunks gathered and copied: the fast model's 19 MB graph in 4 ms, not 16-22.)"""
    limit = min(info.file_size, limit_of(info.filename))
    try:
        with z.open(info) as f:
            data = f.read(limit + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError, NotImplementedError) as e:
        why = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        raise _refuse(path, info.filename, f"its data does not match its header ({why})") from None
    if len(data) > limit:
        raise _refuse(path, info.filename, f"holds more than the {info.file_size} bytes its header declares")
    if len(data) != info.file_size:
        raise _refuse(path, info.filename, f"holds {len(data)} bytes, not the {info.file_size} its header declares")
    return data


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


def _check_frontend(path: Path, members: dict[str, Any], fe_conf: Any, prefix: str = "") -> None:
    """A frontend's kind named (frontend.yaml: `fe_conf`), the members all files a frontend of that kind holds, and
    a `plm` frontend's tokenizer among them (`prefix`: the model's place in an ensemble package, for messages)."""
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


def _frontend(path: Path, members: dict[str, Any], prefix: str = "") -> Frontend:
    """The frontend, from its members (checked by `_check_frontend`) written into a private temporary directory
    by validated names (`prefix`: the model's place in an ensemble package, for messages)."""
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
    corrupt or other-version files. In two steps: every model's members read and checked in this
    layer (`_model_members`), then each model's frontend, boundary fusion and checks of the layers
    below built in one place (`_built`)."""
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
        weights, models = _ensemble_members(p, manifest, members)
        return EnsemblePackage(p, manifest, [_built(m) for m in models], weights)
    for name in members:
        if split_member(name)[0]:
            raise _refuse(p, name, "an ensemble member in a single-model package")
    return _built(_model_members(p, manifest, members))


@dataclass
class ModelMembers:
    """One model's members, read and checked as far as the package layer can (`_model_members`): what
    `_built` makes a Package of."""

    path: Path
    prefix: str                  # the model's place in an ensemble package ("" for a single model), for messages
    manifest: dict[str, Any]
    conf: dict[str, Any]         # config.yaml, checked by `_config`
    members: dict[str, Any]      # name inside the model -> bytes (model.pt: a DeferredMember)
    frontend_digest: str


def _model_members(p: Path, manifest: dict[str, Any], members: dict[str, Any], prefix: str = "") -> ModelMembers:
    """One model's members (names inside the model; `prefix`: its place in an ensemble) checked in this layer:
    none missing, the frontend's files those of its kind, its config (`_config`)."""
    missing = [prefix + n for n in REQUIRED if n not in members]
    if not any(n in members for n in WEIGHTS):
        missing.append(prefix + " or ".join(WEIGHTS))
    if missing:
        raise _bad(p, f"incomplete packed model (missing {', '.join(missing)})")
    fe_name = FRONTEND + CONF_FILE
    _check_frontend(p, members, _yaml(p, prefix + fe_name, members[fe_name]), prefix)
    return ModelMembers(p, prefix, manifest, _config(p, members, prefix), members, frontend_digest(members))


def _built(m: ModelMembers) -> Package:
    """The Package of one model's checked members: the objects of the layers below built, and the checks that
    need them made, here in one place: the frontend (text), the boundary fusion with its marks covering the
    model's labels (decode), the vocabulary size training recorded checked against the frontend's, the model
    section (config)."""
    p, config = m.path, m.prefix + "config.yaml"
    frontend = _frontend(p, m.members, m.prefix)
    boundary = None
    if BOUNDARY in m.members:
        where = m.prefix + BOUNDARY
        boundary = BoundaryFusion.from_dict(_json(p, where, m.members[BOUNDARY]), f"{p} ({where})")
        try:
            boundary.columns(get_inventory(m.conf["resolved"]["inventory"]))  # its marks cover the model's labels
        except PunctkitError as e:
            raise _bad(p, f"corrupt packed model ({where}: {e})") from None
    if m.conf["resolved"]["env"]["vocab_size"] != frontend.vocab_size:
        raise _not_packed(p, config, "resolved env")
    check_model_section(m.conf["model"], f"{p}: {config}")
    return Package(p, m.manifest, m.conf, frontend, m.members.get("model.pt"), m.members.get("model.onnx"),
                   m.frontend_digest, boundary)


def _not_packed(p: Path, name: str, what: str) -> PunctkitError:
    """The one-line error for a part of config.yaml that `punctkit pack` does not write so."""
    return _bad(p, f"corrupt packed model ({name}: its {what} is not what punctkit pack writes)")


def _config(p: Path, members: dict[str, Any], prefix: str) -> dict[str, Any]:
    """One model's config.yaml, checked as far as its data goes (`_built` checks its model section and its
    vocabulary size against the frontend): `model` and `resolved` sections, the model's encoder from the
    package (`_own_encoder`), the inventory and `env` (`_env_fits`), a `decode` mapping ({} when absent)
    whose window, step, batch size and beam decoding can use."""
    name = prefix + "config.yaml"
    conf = _yaml(p, name, members["config.yaml"])
    if not isinstance(conf, dict) or not isinstance(conf.get("resolved"), dict) or \
            not isinstance(conf.get("model"), dict):
        raise _bad(p, f"corrupt packed model ({name} has no model/resolved sections)")
    for what, ok in (("resolved inventory", isinstance(conf["resolved"].get("inventory"), str)),
                     ("resolved env", _env_fits(conf["resolved"].get("env"))),
                     ("decode section", isinstance(conf.setdefault("decode", {}), dict))):
        if not ok:
            raise _not_packed(p, name, what)
    try:
        resolve(trained={k: v for k, v in conf["decode"].items() if k in SEARCH_KEYS})
    except PunctkitError as e:
        raise _bad(p, f"corrupt packed model ({name}: {e})") from None
    conf["model"] = _own_encoder(p, members, prefix, conf["model"])
    return conf


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _env_fits(env: Any) -> bool:
    """Whether `resolved.env` holds what training recorded for building the model: a vocabulary size (`_built`
    compares it with the frontend's), the number of labels, the padding id, a feature dimension or null, an
    embedding table's [rows, dim] (within the weights' limit) or null, each named by text."""
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        return False
    shape, feat_dim = env.get("embeddings_shape"), env.get("feat_dim")
    return (_whole(env.get("vocab_size"), 1) and _whole(env.get("n_labels"), 1)
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


def _ensemble_members(p: Path, manifest: dict[str, Any],
                      members: dict[str, Any]) -> tuple[list[float], list[ModelMembers]]:
    """The weights of an ensemble package and its models `models/0/` ... `models/N-1/` (N the number of
    its weights), each model's members checked (`_model_members`)."""
    weights = manifest.get("weights")
    if (not isinstance(weights, list) or not 1 <= len(weights) <= MAX_MEMBERS
            or any(not isinstance(w, (int, float)) or isinstance(w, bool) or not 0 <= w <= 1 for w in weights)
            or abs(sum(weights) - 1) > 1e-6):
        raise _bad(p, f"corrupt ensemble package ({MANIFEST}: 'weights' is not 1 to {MAX_MEMBERS} "
                      f"numbers in [0, 1] summing to 1)")
    groups: dict[str, dict[str, Any]] = {member_prefix(k): {} for k in range(len(weights))}
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
        models.append(_model_members(p, _manifest(p, files[MANIFEST]), files, prefix))
    return [float(w) for w in weights], models
