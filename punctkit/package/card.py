"""A package's card: the short description stored with a packed model (what it is, its training data,
the test figures it quotes and the decoding behind them), with no absolute path of the packing machine."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from punctkit.decode.options import OPTIONS_FILE, read_options
from punctkit.files import PunctkitError
from punctkit.score import read_score


def _train_data(exp: Path) -> str | None:
    """`TRAIN (dev DEV)` from the first line of train.log that names them."""
    log = exp / "train.log"
    if not log.is_file():
        return None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.search(r"punctkit train: (.+?) -> ", line)
        if m:
            return m.group(1)
    return None


def card_result(path: Path) -> dict[str, Any]:
    """Overall P/R/F1 (and SER) from a `score.json` written by `punctkit score -o`, the exact-form
    case F1 where the reference has case (`case_f1`), with the decoding options behind it (`decoding_of`)."""
    res = read_score(path)
    overall = res["overall"]
    out = {k: overall[k] for k in ("precision", "recall", "f1") if k in overall}
    if "SER" in res:
        out["SER"] = res["SER"]
    case = res.get("case")
    exact = case.get("exact") if isinstance(case, dict) else None
    if isinstance(exact, dict) and isinstance(exact.get("f1"), (int, float)):
        out["case_f1"] = exact["f1"]
    out["source"] = str(path)
    opts = decoding_of(path)
    if opts is not None:
        out["decode"] = opts
    return out


CARD_DECODE = ("window", "step", "beam", "overlap", "capital_threshold", "capital_weight")
# the entries `punctkit pack` writes itself (`make_card`, `model_files`), which no note may replace
# (`pack --card-note`, a re-pack's too)
CARD_OWN = ("name", "model", "frontend", "inventory", "checkpoint", "training_data", "decode", "epochs",
            "best_dev_f1", "distilled_from", "results", "onnx")


def decoding_of(score_json: Path) -> dict[str, Any] | None:
    """The window, step, beam, overlap and capital rule a scored hypothesis was decoded with: the decode_options.yaml
    beside `score_json` (the recipe copies it there) or in its `hyp/`; None when neither exists."""
    for p in (score_json.parent / OPTIONS_FILE, score_json.parent / "hyp" / OPTIONS_FILE):
        if p.is_file():
            opts = read_options(p).search()
            return {k: opts[k] for k in CARD_DECODE}
    return None


def quoted_decoding(card_results: list[Path]) -> dict[str, Any] | None:
    """The decoding behind the scores a card quotes (one setting for all; an error when they
    differ), which the package then decodes with; None when no score records its options."""
    found = {str(p): d for p in card_results if (d := decoding_of(p)) is not None}
    if len({tuple(sorted(d.items())) for d in found.values()}) > 1:
        raise PunctkitError("--card-results: the scores were decoded with different settings ("
                            + "; ".join(f"{p}: {d}" for p, d in found.items()) + "); quote one setting")
    return next(iter(found.values()), None)


# An absolute path inside a card's text: POSIX (`/home/...`: a `/` that starts a word, not one inside a
# URL, a fraction or `a/b`), a Windows drive (`C:\\...`) or a UNC share (`\\\\host\\...`).
ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/\\-])(?:/|[A-Za-z]:[\\/]|\\\\)[^\s\"'<>|;,(){}\[\]]+")


def card_paths(value: Any, bases: Iterable[Path] = ()) -> Any:
    """`value` (a card, or any of its entries) with every absolute path in its text made relative: to
    the first of `bases` it lies under (never the filesystem root), else its last component, so that
    a card names no directory of the machine that packed it (`/home/USER/...`). Used when a card is
    made (bases: the working directory, the experiment's parent) and when one is served."""
    if isinstance(value, dict):
        return {k: card_paths(v, bases) for k, v in value.items()}
    if isinstance(value, list):
        return [card_paths(v, bases) for v in value]
    if not isinstance(value, str):
        return value
    roots = [b for b in (Path(os.path.abspath(b)) for b in bases) if b != Path(b.anchor)]

    def relative(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith("/"):
            path = Path(os.path.normpath(text))
            for root in roots:
                if path.is_relative_to(root) and path != root:
                    return path.relative_to(root).as_posix()
        return re.split(r"[\\/]", text.rstrip("\\/"))[-1] or "."

    return ABSOLUTE_PATH.sub(relative, value)


def make_card(exp: Path, conf: dict[str, Any], checkpoint: Path, card_results: list[Path],
              train_data: str | None, notes: dict[str, str] | None = None) -> dict[str, Any]:
    """The short description stored with a packed model; `notes`: more entries (`pack --card-note
    KEY=TEXT`: the command that rebuilds it, the training data's licence, ...), never over a built-in one."""
    card: dict[str, Any] = {
        "name": exp.resolve().name,
        "model": conf["model"].get("type"),
        "frontend": conf["frontend"].get("kind", "word"),
        "inventory": conf["resolved"]["inventory"],
        "checkpoint": checkpoint.name,
        "training_data": train_data or _train_data(exp),
        "decode": {k: conf["decode"][k] for k in CARD_DECODE if k in conf["decode"]},
    }
    distill = (conf.get("train") or {}).get("distill") or {}
    if isinstance(distill, dict) and distill.get("probs"):  # a student names its teacher's labels
        card["distilled_from"] = {k: distill[k] for k in ("probs", "weight", "temperature") if k in distill}
    from punctkit.expdir import training_history

    try:  # history.json, or the last epoch checkpoint's record when a kill left history.json behind it
        h = training_history(exp)
        if h is not None:
            card["epochs"] = len(h)
            scores = [e["valid_f1"] for e in h if e.get("valid_f1") is not None]
            card["best_dev_f1"] = max(scores) if scores else None
    except (PunctkitError, TypeError, KeyError, AttributeError):
        pass  # a history that cannot be read gives the card no epochs
    card["results"] = {p.parent.name: card_result(p) for p in card_results}
    for key, text in (notes or {}).items():
        if key in card:
            raise PunctkitError(f"--card-note {key}: the card's own entry; name the note otherwise")
        card[key] = text
    return card_paths(card, [Path.cwd(), exp.parent])  # no absolute path of this machine on the card


# ---------------------------------------------------------------- the card as `punctkit models` prints it

# the notes `punctkit models --long` prints
CARD_NOTES = ("training_data", "licence", "boundary_data", "boundary_licence", "speed", "rebuild")
SPEED = re.compile(r"^\s*([\d,.]+(?:\s*-\s*[\d,.]+)?\s*words/s)")


def card_figures(card: dict[str, Any], tests_only: bool = False) -> list[tuple[str, float, float | None]]:
    """The card's quoted results as (set, punctuation F1, exact-form case F1 or None), by set name (the
    `decode_` of the directory dropped); `tests_only`: the sets named `test` where there are any."""
    out = []
    for name, r in sorted((card.get("results") or {}).items()):
        if not isinstance(r, dict):
            continue
        case = r.get("case_f1")
        out.append((name.removeprefix("decode_"), float(r.get("f1") or 0.0),
                    float(case) if isinstance(case, (int, float)) else None))
    tested = [f for f in out if "test" in f[0]]
    return (tested or out) if tests_only else out


def card_summary(card: dict[str, Any]) -> str:
    """A card in one line: model (inventory), speed (its leading figure) and the test sets' F1 (punctuation,
    then exact-form case where quoted)."""
    speed = SPEED.match(str(card.get("speed") or ""))
    figures = ", ".join(f"{name} {f1:.1f}" + (f"/{case:.1f}" if case is not None else "")
                        for name, f1, case in card_figures(card, tests_only=True))
    out = f"{card.get('model', '?')} ({card.get('inventory', '?')})"
    if speed:
        out += f", {speed.group(1)}"
    if figures:
        out += f"; F1 punctuation/case: {figures}"
    return out


def card_details(card: dict[str, Any]) -> list[str]:
    """A card's notes (training data, licences, speed, the command that rebuilds it) and every quoted
    result, a line each (`punctkit models --long`)."""
    lines = [f"{key.replace('_', ' ')}: {card[key]}" for key in CARD_NOTES if card.get(key)]
    for name, f1, case in card_figures(card):
        lines.append(f"{name}: punctuation F1 {f1:.1f}" + (f", exact-form case F1 {case:.1f}" if case is not None
                                                            else ""))
    return lines
