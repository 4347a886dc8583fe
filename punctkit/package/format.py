"""The package format: its name and version, the members a package may hold (by frontend kind) and
their size limits, and how an ensemble names its members' files (`models/K/...`)."""
from __future__ import annotations

import re

from punctkit.archive import FRONTEND_LIMIT, MANIFEST, WEIGHTS_LIMIT, MiB
from punctkit.data.case_prior import CasePrior
from punctkit.data.labels import CaseLexicon
from punctkit.files import PunctkitError
from punctkit.text.frontend import CONF_FILE
from punctkit.text.plm import TOKENIZER_DIR
from punctkit.text.plm_tokenizer import TOKENIZER_FILES

FORMAT_NAME = "punctkit-model"
FORMAT_VERSION = 1
FRONTEND = "frontend/"

META_LIMIT = 4 * MiB           # punctkit.json, config.yaml, frontend/frontend.yaml
BOUNDARY = "boundary.json"  # how turns and pauses weigh on the marks (decode/boundary.py), optional
LIMITS = {MANIFEST: META_LIMIT, "config.yaml": META_LIMIT, FRONTEND + CONF_FILE: META_LIMIT,
          "model.pt": WEIGHTS_LIMIT, "model.onnx": WEIGHTS_LIMIT, BOUNDARY: META_LIMIT}
REQUIRED = (MANIFEST, "config.yaml", FRONTEND + CONF_FILE)  # and model.pt or model.onnx (or both)
WEIGHTS = ("model.pt", "model.onnx")

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


def allowed_members(kind: str) -> tuple[str, ...]:
    """Every member name a package whose frontend is of `kind` may hold."""
    if kind not in FRONTEND_FILES:
        raise PunctkitError(f"unknown frontend kind '{kind}' (known: {', '.join(sorted(FRONTEND_FILES))})")
    return tuple(LIMITS) + tuple(FRONTEND + n for n in FRONTEND_FILES[kind])


def limit_of(name: str) -> int:
    """The largest uncompressed size accepted for member `name` (an ensemble member's file: as in one model)."""
    return LIMITS.get(split_member(name)[1], FRONTEND_LIMIT)
