"""Input representations ("frontends"): words -> token ids, and which token carries each word's label.

A frontend is chosen by `frontend: {kind: ..., <options>}` in the training
config. Every kind implements the same small interface:

- `encode(words) -> (token_ids, word_pos)`: `word_pos[i]` is the index in
  `token_ids` of the token that carries word i's label (the word's last piece by
  default, `label_on: first` for the first); the other pieces carry no label.
- `tokens(words)`: the token strings, for inspection.
- `vocab_size`, `pad_id`, `unk_id`.
- `train(sentences, out_dir, **options)` (classmethod): learn the vocabulary /
  BPE codes / model from training sentences into `out_dir` and return the frontend.
- `save(dir)` / `load_frontend(dir)`: a self-contained directory with
  `frontend.yaml` (kind + options) and the kind's own files.
- `lowercase: true` (any kind): the model reads every word lower-cased (true-case training data keep
  each word's exact form; stage 3 sets it for them). `split_contractions: true`: the model was trained
  on IWSLT's tokens (`do n't`, `i 'm`: stage 3 sets it when the training text has them), so readers
  of users' text split `don't` for it (punctkit.data.tokenize.split_contraction) and show it whole.
  `case_lexicon`: the exact forms of the training text's Mixed-case words (`CaseLexicon`, saved as
  `case_lexicon.txt`), for showing true case.

A new kind subclasses `Frontend`, implements `pieces`, `piece_strs`,
`vocab_size`, `learn`, `_write` and `read_dir`, and registers itself with
`@register_frontend("kind")`. Kinds living in other modules are listed in
`_MODULES` so that loading a model dir finds them.
"""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable

import yaml

from punctkit.data.case_prior import CasePrior
from punctkit.data.labels import CaseLexicon
from punctkit.files import PunctkitError, atomic_write, iter_lines, output_dir, read_yaml_mapping, require_file
from punctkit.text.vocab import Vocab

FRONTENDS: dict[str, type["Frontend"]] = {}
_MODULES = ("punctkit.text.plm",)  # frontends registered outside this file
CONF_FILE = "frontend.yaml"
# What any kind writes into a frontend directory (`plm/`: a copied tokenizer).
FRONTEND_FILES = (CONF_FILE, "vocab.txt", "bpe.codes", "spm.model", "plm/", CaseLexicon.FILE, CasePrior.FILE)


def register_frontend(kind: str) -> Callable[[type["Frontend"]], type["Frontend"]]:
    """Class decorator: make a frontend available as `frontend: {kind: ...}`."""

    def deco(cls: type[Frontend]) -> type[Frontend]:
        FRONTENDS[kind] = cls
        cls.kind = kind
        return cls

    return deco


class Frontend:
    """Base class; see the module docstring for the interface."""

    kind: ClassVar[str] = ""
    # options checked before they are used: name -> `str` (text) or the lowest whole number it may be;
    # None also where the kind's default is None
    CHECKED: ClassVar[dict[str, Any]] = {}
    pad_id: int = 0
    unk_id: int = 1

    def __init__(self, label_on: str = "last", lowercase: bool = False, split_contractions: bool = False,
                 **options: Any):
        if label_on not in ("last", "first"):
            raise PunctkitError(f"frontend label_on must be 'last' or 'first', not '{label_on}'")
        for name, value in (("lowercase", lowercase), ("split_contractions", split_contractions)):
            if not isinstance(value, bool):
                raise PunctkitError(f"frontend {name} must be true or false, not {value!r}")
        self.label_on = label_on
        self.lowercase = lowercase
        self.split_contractions = split_contractions
        flags = {k: True for k, v in (("lowercase", lowercase), ("split_contractions", split_contractions)) if v}
        self.options = dict(options, label_on=label_on, **flags)
        self.case_lexicon: CaseLexicon | None = None
        self.case_prior: CasePrior | None = None  # capitals inside sentences (decode/joint.py)
        self._cache: dict[str, list[int]] = {}

    # --- to implement per kind
    def pieces(self, word: str) -> list[int]:
        """The token ids of one word (at least one)."""
        raise NotImplementedError

    def piece_strs(self, word: str) -> list[str]:
        """The token strings of one word."""
        raise NotImplementedError

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    @classmethod
    def learn(cls, sentences: list[list[str]], out_dir: Path, **options: Any) -> None:
        """Learn this kind's files into `out_dir` from training sentences."""
        raise NotImplementedError

    def _write(self, out_dir: Path) -> None:
        """Write this kind's files (besides frontend.yaml) into `out_dir`."""
        raise NotImplementedError

    @classmethod
    def read_dir(cls, in_dir: Path, **options: Any) -> "Frontend":
        """Build the frontend from files written by `_write` (or `learn`)."""
        raise NotImplementedError

    # --- shared behaviour
    def word_ids(self, word: str) -> list[int]:
        """Cached `pieces(word)`."""
        ids = self._cache.get(word)
        if ids is None:
            ids = self.pieces(word.lower() if self.lowercase else word) or [self.unk_id]
            self._cache[word] = ids
        return ids

    def encode(self, words: list[str]) -> tuple[list[int], list[int]]:
        """Token ids of `words` and, per word, the index of its label-carrying token."""
        ids: list[int] = []
        word_pos: list[int] = []
        for w in words:
            p = self.word_ids(w)
            word_pos.append(len(ids) + (len(p) - 1 if self.label_on == "last" else 0))
            ids.extend(p)
        return ids, word_pos

    def tokens(self, words: list[str]) -> list[str]:
        """The token strings of `words`, for inspection."""
        return [t for w in words for t in self.piece_strs(w.lower() if self.lowercase else w)]

    def unk_rate(self, words: Iterable[str]) -> float:
        """Fraction of words with an unknown token among their pieces."""
        n = bad = 0
        for w in words:
            n += 1
            bad += self.unk_id in self.word_ids(w)
        return bad / max(n, 1)

    @classmethod
    def train(cls, sentences: list[list[str]], out_dir: str | Path, overwrite: bool = False,
              **options: Any) -> "Frontend":
        """Learn from `sentences` (lists of words), save into `out_dir`, return the frontend.

        `out_dir` may hold only frontend files unless `overwrite` (others are kept either way)."""
        out = Path(out_dir)
        if not any(sentences):
            raise PunctkitError(f"{out}: no training words to build a '{cls.kind}' frontend from")
        with output_dir(out, FRONTEND_FILES, overwrite=overwrite):
            cls.learn(sentences, out, **options)
            fe = cls.read_dir(out, **options)
            fe.save(out, overwrite=True)
        return fe

    def save(self, out_dir: str | Path, overwrite: bool = False) -> None:
        """Write `frontend.yaml` and this kind's files into `out_dir` (as `train` does)."""
        out = Path(out_dir)
        with output_dir(out, FRONTEND_FILES, overwrite=overwrite):
            self._write(out)
            if self.case_lexicon is not None:
                with atomic_write(out / CaseLexicon.FILE) as f:
                    f.writelines(line + "\n" for line in self.case_lexicon.lines())
            if self.case_prior is not None:
                with atomic_write(out / CasePrior.FILE) as f:
                    f.writelines(line + "\n" for line in self.case_prior.lines())
        with atomic_write(out / CONF_FILE) as f:
            yaml.safe_dump({"kind": self.kind, **self.options}, f, sort_keys=True)

    @classmethod
    def load(cls, in_dir: str | Path) -> "Frontend":
        """Read a frontend directory of any kind."""
        return load_frontend(in_dir)


def _find(kind: str) -> type[Frontend]:
    if not isinstance(kind, str):
        raise PunctkitError(f"the frontend kind must be a name ({', '.join(sorted(FRONTENDS))}, ...), got {kind!r}")
    if kind not in FRONTENDS:
        for mod in _MODULES:
            try:
                importlib.import_module(mod)
            except ModuleNotFoundError as e:
                if e.name != mod:
                    raise
    if kind not in FRONTENDS:
        raise PunctkitError(f"unknown frontend kind '{kind}' (known: {', '.join(sorted(FRONTENDS))})")
    return FRONTENDS[kind]


def load_frontend(in_dir: str | Path) -> Frontend:
    """Read `frontend.yaml` in `in_dir` and the files of its kind."""
    d = Path(in_dir)
    conf = dict(read_yaml_mapping(d / CONF_FILE, "frontend description", "a mapping with the frontend's kind"))
    cls = _find(conf.pop("kind", "word"))
    fe = cls.read_dir(d, **options_of(cls, conf, str(d / CONF_FILE)))
    if (d / CaseLexicon.FILE).is_file():
        fe.case_lexicon = CaseLexicon.parse((line for _, line in iter_lines(d / CaseLexicon.FILE)),
                                            str(d / CaseLexicon.FILE))
    if (d / CasePrior.FILE).is_file():
        fe.case_prior = CasePrior.read(d / CasePrior.FILE)
    return fe


def piece_lines(frontend: Frontend, src: str | Path) -> Iterable[str]:
    """Segment a data dir's `text` (`uttid piece ...`) or a text file (one line of words each)."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.files import iter_lines

    p = Path(src)
    if p.is_dir():
        for u in read_data_dir(p, need_labels=False).utterances:
            yield " ".join([u.uttid] + frontend.tokens(u.words))
    else:
        for _, line in iter_lines(p):
            yield " ".join(frontend.tokens(line.split()))


def train_frontend(conf: dict[str, Any], sentences: list[list[str]], out_dir: str | Path,
                   overwrite: bool = False) -> Frontend:
    """Build the frontend described by a config's `frontend:` section from training sentences."""
    conf = dict(conf or {})
    cls = _find(conf.pop("kind", "word"))
    return cls.train(sentences, out_dir, overwrite=overwrite, **options_of(cls, conf, "config frontend section"))


def check_frontend_section(conf: dict[str, Any] | None, where: str) -> None:
    """A config's `frontend:` section checked as `train_frontend` reads it (its kind, its options'
    names and values), before anything is built: a one-line error starting with `where`."""
    conf = dict(conf or {})
    cls = _find(conf.pop("kind", "word"))
    options_of(cls, conf, f"{where}: frontend section")


# what the frontend functions take themselves: never an option's name
TAKEN = frozenset({"in_dir", "out_dir", "sentences", "overwrite"})


def options_of(cls: type[Frontend], conf: dict[Any, Any], where: str) -> dict[str, Any]:
    """`conf` (a frontend description less its kind) as keyword options of `cls`: names that are text
    and none of the arguments the kind takes itself (its files, TAKEN), values as `cls.CHECKED`
    says; a one-line error starting with `where` otherwise."""
    params = inspect.signature(cls.__init__).parameters
    own = {n for n, p in params.items() if p.default is p.empty and p.kind is not p.VAR_KEYWORD}
    bad = [k for k in conf if not isinstance(k, str) or k in TAKEN | own]
    if bad:
        raise PunctkitError(f"{where}: {', '.join(map(repr, bad))}: not an option a '{cls.kind}' frontend can take")
    for name, rule in cls.CHECKED.items():
        v = conf.get(name)
        if name not in conf or (v is None and params[name].default is None):
            continue
        if not (isinstance(v, str) if rule is str else isinstance(v, int) and not isinstance(v, bool) and v >= rule):
            want = "text" if rule is str else f"a whole number >= {rule}"
            raise PunctkitError(f"{where}: option {name} of a '{cls.kind}' frontend must be {want}, got {v!r}")
    return conf


# ------------------------------------------------------------------ kinds

@register_frontend("word")
class WordFrontend(Frontend):
    """One token per word; words seen fewer than `min_count` times are `<unk>`."""

    CHECKED = {"min_count": 0, "max_size": 1}

    def __init__(self, vocab: Vocab, min_count: int = 1, max_size: int | None = None, lowercase: bool = False,
                 **options: Any):
        super().__init__(min_count=min_count, max_size=max_size, lowercase=lowercase, **options)
        self.vocab = vocab
        self.options["lowercase"] = lowercase  # as word frontends always wrote it

    def _norm(self, word: str) -> str:
        return word.lower() if self.lowercase else word

    def pieces(self, word: str) -> list[int]:
        return [self.vocab.id(self._norm(word))]

    def piece_strs(self, word: str) -> list[str]:
        w = self._norm(word)
        return [w if w in self.vocab else "<unk>"]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @classmethod
    def learn(cls, sentences: list[list[str]], out_dir: Path, min_count: int = 1, max_size: int | None = None,
               lowercase: bool = False, **_: Any) -> None:
        words = (w.lower() if lowercase else w for s in sentences for w in s)
        Vocab.build(words, min_count, max_size).save(out_dir / "vocab.txt")

    def _write(self, out_dir: Path) -> None:
        self.vocab.save(out_dir / "vocab.txt")

    @classmethod
    def read_dir(cls, in_dir: Path, **options: Any) -> "WordFrontend":
        return cls(Vocab.load(require_file(in_dir / "vocab.txt", "vocabulary")), **options)


@register_frontend("subword_nmt")
class SubwordNmtFrontend(Frontend):
    """BPE pieces from subword-nmt codes (`merges` operations); vocabulary of the pieces seen in training."""

    CHECKED = {"merges": 0, "min_frequency": 0}

    def __init__(self, codes: Path, vocab: Vocab, merges: int = 10000, min_frequency: int = 2, **options: Any):
        from punctkit.text.bpe import SubwordNmt

        super().__init__(merges=merges, min_frequency=min_frequency, **options)
        self.codes_path = Path(codes)
        self.bpe = SubwordNmt(codes)
        self.vocab = vocab

    def piece_strs(self, word: str) -> list[str]:
        return self.bpe.split(word)

    def pieces(self, word: str) -> list[int]:
        return [self.vocab.id(p) for p in self.bpe.split(word)]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @classmethod
    def learn(cls, sentences: list[list[str]], out_dir: Path, merges: int = 10000, min_frequency: int = 2,
               **_: Any) -> None:
        from punctkit.text.bpe import SubwordNmt, learn_subword_nmt

        learn_subword_nmt((" ".join(s) for s in sentences), out_dir / "bpe.codes", merges, min_frequency)
        bpe = SubwordNmt(out_dir / "bpe.codes")
        Vocab.build(p for s in sentences for w in s for p in bpe.split(w)).save(out_dir / "vocab.txt")

    def _write(self, out_dir: Path) -> None:
        if (out_dir / "bpe.codes").resolve() != self.codes_path.resolve():
            with atomic_write(out_dir / "bpe.codes") as f:
                f.write(self.codes_path.read_text(encoding="utf-8"))
        self.vocab.save(out_dir / "vocab.txt")

    @classmethod
    def read_dir(cls, in_dir: Path, **options: Any) -> "SubwordNmtFrontend":
        vocab = Vocab.load(require_file(in_dir / "vocab.txt", "vocabulary"))
        return cls(in_dir / "bpe.codes", vocab, **options)


@register_frontend("sentencepiece")
class SentencePieceFrontend(Frontend):
    """sentencepiece pieces (`model_type` bpe or unigram, `vocab_size` pieces); `<pad>` = 0, `<unk>` = 1."""

    CHECKED = {"vocab_size": 1}

    def __init__(self, model: Path, vocab_size: int = 8000, model_type: str = "bpe", **options: Any):
        from punctkit.text.bpe import SentencePiece

        super().__init__(vocab_size=vocab_size, model_type=model_type, **options)
        self.model_path = Path(model)
        self.sp = SentencePiece(model)

    def piece_strs(self, word: str) -> list[str]:
        return self.sp.split(word)

    def pieces(self, word: str) -> list[int]:
        return self.sp.ids(word)

    @property
    def vocab_size(self) -> int:
        return len(self.sp)

    @classmethod
    def learn(cls, sentences: list[list[str]], out_dir: Path, vocab_size: int = 8000, model_type: str = "bpe",
               **_: Any) -> None:
        from punctkit.text.bpe import train_sentencepiece

        train_sentencepiece((" ".join(s) for s in sentences), out_dir / "spm.model", vocab_size, model_type,
                            pad_id=cls.pad_id, unk_id=cls.unk_id)

    def _write(self, out_dir: Path) -> None:
        if (out_dir / "spm.model").resolve() != self.model_path.resolve():
            with atomic_write(out_dir / "spm.model", "wb") as f:
                f.write(self.model_path.read_bytes())

    @classmethod
    def read_dir(cls, in_dir: Path, **options: Any) -> "SentencePieceFrontend":
        return cls(in_dir / "spm.model", **options)
