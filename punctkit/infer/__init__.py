"""The inference engine (ESPnet's `Speech2Text`): what `punctkit decode`, `punctuate`, `serve` and
`--stream` all label with, through its one labelling call, `Engine.label`.

- engine.py: `Engine`, the one engine object, and `load_model`, the one way one is built (from
  shipped names, packages, trained model directories, ensembles): bounded memory, the decision of
  marks and case (decode/decide.py), the forced marks and the stream's ends, each in one place;
- scorers.py: what gives the engine its distributions: one model (`ModelScorer`) or an `Ensemble`
  that averages its members' (`MemberRun`: shared windows, threads, in turn);
- backends.py: a `Runner` per backend (torch, onnxruntime, an ensemble's ONNX members side by side)
  and the decoding options a package starts from;
- render.py: how labelled words are shown (marks and case on the words as written);
- stream.py: streaming over the engine (`PunctStream`, the line protocol of `--stream`).
"""
from punctkit.infer.backends import Runner
from punctkit.infer.engine import Engine, Labelled, load_model
from punctkit.infer.scorers import Ensemble, ModelScorer

__all__ = ["Engine", "Ensemble", "Labelled", "ModelScorer", "Runner", "load_model"]
