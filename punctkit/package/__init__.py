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

The modules: format.py (the format's constants and member names), card.py (the card), write.py
(a model's or an ensemble's members, written atomically), read.py (validation and rebuilding). This
package's names are its public face: `from punctkit.package import read_package`. The `pack` command
itself (write, load back, rename) is punctkit/packing.py, above the engine that loads the file back.
"""
from punctkit.archive import unsafe_name
from punctkit.package.card import card_paths, make_card
from punctkit.package.format import (
    FRONTEND_FILES,
    KNOWN,
    MANIFEST,
    MAX_MEMBERS,
    allowed_members,
    is_dir_entry,
    split_member,
)
from punctkit.package.read import EnsemblePackage, Package, check_entries, local_files_only, read_package
from punctkit.package.write import Packed, check_package_output, ensemble_package, model_files, model_package, writing

__all__ = [
    "FRONTEND_FILES", "KNOWN", "MANIFEST", "MAX_MEMBERS", "EnsemblePackage", "Package", "Packed", "allowed_members",
    "card_paths", "check_entries", "check_package_output", "ensemble_package", "is_dir_entry", "local_files_only",
    "make_card", "model_files", "model_package", "read_package", "split_member", "unsafe_name", "writing",
]
