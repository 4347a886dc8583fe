"""The inference engine (ESPnet's `Speech2Text`): what `punctkit decode`, `punctuate`, `serve` and
`--stream` all label with.

- engine.py: the `Engine` protocol and `Punctuator`, one model built from a package (torch or
  onnxruntime) or from an experiment (checkpoint, decoding options);
- ensemble.py: `Ensemble`, several engines as one (`MemberRun`: shared windows, threads, in turn);
- pipeline.py: utterances to labels, shown words and probabilities (no I/O);
- stream.py: streaming, typed on the engine;
- backends.py: how a package runs (torch, int8, onnxruntime) and its decoding options.
"""
from punctkit.infer.engine import Engine, Punctuator
from punctkit.infer.ensemble import Ensemble, load_model
from punctkit.infer.pipeline import Fixed, Labeller, label_units

__all__ = ["Engine", "Ensemble", "Fixed", "Labeller", "Punctuator", "label_units", "load_model"]
