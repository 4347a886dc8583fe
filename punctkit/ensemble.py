"""The ensemble API's documented path: `Ensemble`, `load_model` and `side_by_side` live in
punctkit/infer/ensemble.py, `pack_ensemble` (`punctkit pack --ensemble`) in punctkit/packing.py."""
from punctkit.decode.combine import check_inventories, combine, parse_weights
from punctkit.infer.ensemble import MEMBER_RUNS, Ensemble, MemberRun, load_model, side_by_side
from punctkit.packing import pack_ensemble

__all__ = ["Ensemble", "MEMBER_RUNS", "MemberRun", "check_inventories", "combine", "load_model", "pack_ensemble",
           "parse_weights", "side_by_side"]
