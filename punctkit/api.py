"""The Python API in one line: `punctkit.load(model)` and the `Model` it returns.

    >>> import punctkit
    >>> punctkit.load().punctuate("so what do you think")
    'So what do you think?'

`load` is the one way to build a model (names, packages, trained model directories, ensembles: it wraps
the engine's one loader, infer/engine.py: `load_model`). `Model` is a loaded engine (infer/: `Engine`,
whose scorer is one model or an `Ensemble` of several) with the
options of `punctkit punctuate` (`keep_input_marks`, `capitalize`, `recase`) and calls that take
plain Python values: `punctuate` (a text, or texts, in and out), `label` (`Labelled` units: labels,
words as shown, probabilities, times), `label_file` (any input format punctuate reads) and
`stream` (a `PunctStream`). Everything goes through `Engine.label`, so its labels are those of
`punctkit punctuate` (docs/api.md; tests/test_api.py runs its examples).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence, overload

from punctkit.data.formats.base import AsrUtterance
from punctkit.data.formats.protocol import ReadContext
from punctkit.data.labels import default_substitution
from punctkit.files import PunctkitError
from punctkit.infer.engine import Engine, Given, Labelled, load_model, text_unit
from punctkit.infer.render import Casing
from punctkit.infer.stream import PunctStream
from punctkit.punctuator import input_reader

Models = str | os.PathLike | Sequence[str | os.PathLike]  # a shipped model's name, a package, or several


@dataclass
class Model:
    """A loaded model (`engine`) and how its output is shown: `keep_input_marks` keeps the marks the input
    has (the model predicts only the other slots), `capitalize=False` shows every word in the case it came
    in, `recase` gives the model's case also where the input carries case (punctuate's options)."""

    engine: Engine
    keep_input_marks: bool = False
    capitalize: bool = True
    recase: bool = False

    @property
    def casing(self) -> Casing:
        """How the words are shown (`Engine.casing` under this model's options)."""
        return self.engine.casing(self.capitalize, self.recase)

    @property
    def labels(self) -> tuple[str, ...]:
        """The model's labels (mark and case classes), in the order of a `Labelled`'s probabilities."""
        return self.engine.inventory.labels

    @property
    def card(self) -> dict[str, Any]:
        """The packed model's card: training data, licences, figures (what `punctkit models --long` prints)."""
        return self.engine.card

    @overload
    def punctuate(self, text: str) -> str: ...

    @overload
    def punctuate(self, text: Iterable[str]) -> list[str]: ...

    def punctuate(self, text: str | Iterable[str]) -> str | list[str]:
        """A text punctuated and cased, its words and line breaks kept (its lines one stream: sentences
        run across them, as `punctkit punctuate` reads a text file); a list or any iterable of texts
        (a file's lines, say): a list, each text its own document, starting and ending sentences, decoded
        in batches. Words pass through: only their marks and case change."""
        if isinstance(text, str):
            return self._documents([text])[0]
        return self._documents(text)

    def _documents(self, texts: Iterable[str]) -> list[str]:
        """Each text as `punctuate` shows one: its lines one stream, batched with the other texts."""
        inv = self.engine.inventory
        rules = default_substitution(inv)
        lines_of: list[int] = []  # per text: its lines (known once the engine has read it)
        ends: list[str] = []      # per text: its final line break, kept

        def units() -> Iterator[list[AsrUtterance]]:
            for d, text in enumerate(texts):
                if not isinstance(text, str):
                    raise PunctkitError(f"punctuate takes a text or texts (str); text {d + 1} is a "
                                        f"{type(text).__name__}")
                lines = text.splitlines() or [""]
                lines_of.append(len(lines))
                ends.append("\n" if text.endswith(("\n", "\r")) else "")
                yield [text_unit(t, inv, f"s{d}", i, rules) for i, t in enumerate(lines, 1)]

        out: list[str] = []
        done: list[Labelled] = []
        for x in self.engine.label(units(), forced=self.keep_input_marks, casing=self.casing):
            done.append(x)
            if len(done) == lines_of[len(out)]:
                out.append("\n".join(d.text for d in done) + ends[len(out)])
                done = []
        return out

    @overload
    def label(self, units: str, probs: bool = False) -> Labelled: ...

    @overload
    def label(self, units: Iterable[Given], probs: bool = False) -> list[Labelled]: ...

    def label(self, units: str | Iterable[Given], probs: bool = False) -> Labelled | list[Labelled]:
        """A text labelled as one utterance (its line breaks are spaces; `punctuate` keeps them): a
        `Labelled` with its `words`, `labels`, `shown` words and `text`, and with `probs` the
        `probabilities` of each word's labels. A list or iterable of units: a list of `Labelled`, one a
        unit (a text, a list of words, or an utterance of a reader), each its own id (`utt.uttid`)."""
        got = list(self.engine.label(units, forced=self.keep_input_marks, casing=self.casing, probs=probs))
        return got[0] if isinstance(units, str) else got

    def label_file(self, src: str | Path, input_format: str | None = None, encoding: str | None = None,
                   probs: bool = False) -> Iterator[Labelled]:
        """Each unit of a file labelled, in order, in bounded memory: any format `punctkit punctuate` reads
        (`input_format`, else detected from the content; `punctkit formats` lists them), its units as
        punctuate's (a plain text's lines one stream); a `Labelled`'s `times` are the input's word times."""
        reader = input_reader(src, input_format, encoding, "input_format=")
        inv = self.engine.inventory
        units = reader.streams(src, ReadContext.of(src, inv, default_substitution(inv), encoding,
                                                   told=bool(input_format)))
        yield from self.engine.label(units, one_stream=reader.one_stream, forced=self.keep_input_marks,
                                     casing=self.casing, probs=probs)

    def stream(self, lookahead: int | None = None) -> PunctStream:
        """A stream of one talk's words (`PunctStream`: `feed(words)`, then `finish()`), each word committed
        once `lookahead` further words have come (None: once no later window can hold it, as offline)."""
        return PunctStream(self.engine, lookahead, self.casing)


def load(model: Models = "fast", *, weights: str | Sequence[float] | None = None, keep_input_marks: bool = False,
         capitalize: bool = True, recase: bool = False, **options: Any) -> Model:
    """A model ready to use: a shipped model's name (`fast`, the default, or `accurate`; `punctkit models`
    lists them), a packed model's file, a trained model directory (`punctkit train`'s), or several (an
    ensemble, with `weights`); `options` as infer/engine.py's `load_model`'s (`threads`, `backend`, `step`,
    ...); the others as `Model`'s."""
    return Model(load_model(model, weights, **options), keep_input_marks, capitalize, recase)
