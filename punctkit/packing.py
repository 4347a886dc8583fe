"""`punctkit pack`: a trained model dir (or several, an ensemble) into one package file, which
is loaded back by the inference engine, with each backend it holds, before it replaces `out`
(punctkit/package/ writes and reads the format; punctkit/infer/ loads it)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from punctkit.decode.combine import parse_weights
from punctkit.files import PunctkitError
from punctkit.infer.engine import load_model
from punctkit.package import check_package_output, ensemble_package, model_package, writing
from punctkit.package.write import repackage


def pack(exp_dir: str | Path, out: str | Path, checkpoint: str | None = None,
         card_results: Iterable[str | Path] = (), train_data: str | None = None, onnx: bool = False,
         int8: bool = False, onnx_only: bool = False, notes: dict[str, str] | None = None) -> dict[str, Any]:
    """`punctkit pack` (options as punctkit.package.model_package's); returns the manifest."""
    check_package_output(out)  # before the model is loaded and exported
    packed = model_package(exp_dir, checkpoint=checkpoint, card_results=card_results, train_data=train_data,
                           onnx=onnx, int8=int8, onnx_only=onnx_only, notes=notes)
    with writing(out, packed) as tmp:
        for backend in packed.backends:  # the packed file rebuilds the model on its own
            load_model(tmp, backend=backend, single=True)
    return packed.manifest


def repack(pkg_path: str | Path, out: str | Path, card_results: Iterable[str | Path] = (),
           notes: dict[str, str] | None = None, boundary: str | Path | None = None) -> dict[str, Any]:
    """`punctkit pack PACKAGE`: the package with the decoding and figures of `card_results`
    (punctkit.package.write.repackage), loaded back with each backend it holds; returns the manifest."""
    if Path(out).resolve() == Path(pkg_path).resolve():
        raise PunctkitError(f"{out}: is the package being re-packed; write the new one under another name")
    check_package_output(out)
    packed = repackage(pkg_path, card_results=card_results, notes=notes, boundary=boundary)
    with writing(out, packed) as tmp:
        for backend in packed.backends:
            load_model(tmp, backend=backend, single=True)
    return packed.manifest


def pack_ensemble(exp_dirs: list[str | Path], out: str | Path, weights: str | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """`punctkit pack --ensemble` (punctkit.package.ensemble_package's options; `weights` as `0.6,0.4`,
    default equal); returns the top manifest."""
    check_package_output(out)
    packed = ensemble_package(list(exp_dirs), parse_weights(weights, len(exp_dirs)), **kwargs)
    with writing(out, packed) as tmp:
        for backend in packed.backends:  # the packed file rebuilds every member on its own
            load_model(tmp, backend=backend)
    return packed.manifest
