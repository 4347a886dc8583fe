"""The inference engine (ESPnet's `Speech2Text`): what `punctkit decode`, `punctuate`, `serve` and
`--stream` all label with, through its one labelling call, `Engine.label`.

- engine.py: the `Engine` base and `Punctuator`, one model built from a package (torch or
  onnxruntime) or from an experiment (checkpoint, decoding options): windows, bounded memory, the
  decision of marks and case, the forced marks and the stream's ends, each in one place;
- ensemble.py: `Ensemble`, several engines as one (`MemberRun`: shared windows, threads, in turn);
- render.py: how labelled words are shown (marks and case on the words as written);
- stream.py: streaming over the engine (`PunctStream`, the line protocol of `--stream`);
- backends.py: how a package runs (torch, int8, onnxruntime) and its decoding options.
"""
from punctkit.infer.engine import Backend, Engine, Labelled, Punctuator
from punctkit.infer.ensemble import Ensemble, load_model

__all__ = ["Backend", "Engine", "Ensemble", "Labelled", "Punctuator", "load_model"]
