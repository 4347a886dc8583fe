"""Results tables, as ESPnet's `show_result.sh`: experiment dirs -> one Markdown table.

Each row is one decoded set of one experiment: `EXP/decode_SET/score.json`
(written by `punctkit score -o`), with the training run's length from
`EXP/history.json` (epochs, minutes of training, the best dev F1 and its epoch).
Nothing is recomputed: the table shows exactly what the recipe wrote. `markdown_by_seed`
folds the runs of one system over seeds (`exp/<system>_seed<N>`) into one row: mean ± spread.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punctkit.files import PunctkitError, read_json_file
from punctkit.score import read_score


@dataclass
class ResultRow:
    """One experiment scored on one set."""

    exp: str
    set: str
    score: dict[str, Any]
    history: list[dict[str, Any]]

    @property
    def train_minutes(self) -> float | None:
        return self.history[-1].get("minutes") if self.history else None

    @property
    def best(self) -> tuple[int, float] | None:
        """(epoch, dev F1) of the best epoch."""
        scored = [h for h in self.history if h.get("valid_f1") is not None]
        if not scored:
            return None
        h = max(scored, key=lambda h: (h["valid_f1"], h["epoch"]))
        return h["epoch"], h["valid_f1"]


def _read_history(path: Path) -> list[dict[str, Any]]:
    """A training run's `history.json` (the trainer's per-epoch records); [] when there is none."""
    if not path.is_file():
        return []
    return read_json_file(path)


def collect(exp_dirs: list[str | Path], sets: list[str] | None = None) -> list[ResultRow]:
    """Rows for every `EXP/decode_*/score.json` (only `sets` when given), in the order of `exp_dirs`."""
    rows = []
    for exp in map(Path, exp_dirs):
        if not exp.is_dir():
            raise PunctkitError(f"experiment directory not found: {exp}")
        history = _read_history(exp / "history.json")
        found = sorted(exp.glob("decode_*/score.json"))
        for path in found:
            name = path.parent.name[len("decode_"):]
            if sets is None or name in sets:
                rows.append(ResultRow(exp.name, name, read_score(path), history))
        if not found:
            raise PunctkitError(f"{exp}: no decode_*/score.json (run the scoring stage first)")
    return rows


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _ser(score: dict[str, Any]) -> str:
    """SER for the table: `n/a` when score.json says it is undefined (null: a reference without marks)."""
    if "SER" not in score:
        return "-"
    return "n/a" if score["SER"] is None else _f(score["SER"])


def _exact_case(score: dict[str, Any]) -> list[str]:
    """The exact-form case F1 over all words and inside sentences; `-` where score.json has none."""
    case = score.get("case")
    parts = [case.get(k) if isinstance(case, dict) else None for k in ("exact", "exact_inside")]
    return [_f(m.get("f1")) if isinstance(m, dict) else "-" for m in parts]


def markdown(rows: list[ResultRow]) -> str:
    """One Markdown table: per-class and overall P/R/F1, SER, the exact-form case F1 (all words,
    inside sentences) when some score has it, and the training run's length."""
    if not rows:
        raise PunctkitError("no results to show")
    classes = [c for c in rows[0].score["classes"] if c != "O"]
    cased = any(_exact_case(r.score) != ["-", "-"] for r in rows)
    head = ["system", "set"] + [f"{c} P/R/F1" for c in classes] + ["overall P", "overall R", "overall F1", "SER"]
    head += ["exact case F1", "exact case F1 inside"] if cased else []
    head += ["train min", "epochs", "best epoch (dev F1)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        pc, o = r.score["per_class"], r.score["overall"]
        cells = [r.exp, r.set]
        for c in classes:
            m = pc.get(c)
            cells.append("/".join(_f(m[k]) for k in ("precision", "recall", "f1")) if m else "-")
        best = r.best
        cells += [_f(o["precision"]), _f(o["recall"]), f"**{_f(o['f1'])}**", _ser(r.score)]
        cells += _exact_case(r.score) if cased else []
        cells += [_f(r.train_minutes), str(len(r.history)) if r.history else "-",
                  f"{best[0]} ({best[1]:.1f})" if best else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


SEED_TAG = re.compile(r"[_-]?seed(\d+)")  # ff2s_ff2_seed2 -> system ff2s_ff2, seed 2


def system_of(exp: str) -> str:
    """The system an experiment's name names, without its seed (`x_seed3` -> `x`)."""
    return SEED_TAG.sub("", exp)


def _mean_sd(xs: list[float]) -> str:
    """`mean ± sample standard deviation` (the mean alone for one value; `-` for none)."""
    if not xs:
        return "-"
    return _f(statistics.mean(xs)) + (f" ± {statistics.stdev(xs):.1f}" if len(xs) > 1 else "")


def markdown_by_seed(rows: list[ResultRow]) -> str:
    """One Markdown row per system and set over its seeds: runs whose names differ only in `seedN`
    are one system; F1s and SER are mean ± sample standard deviation, with the seeds, the overall
    F1's range and the runs' epochs (a range flags runs trained for unequal lengths)."""
    if not rows:
        raise PunctkitError("no results to show")
    classes = [c for c in rows[0].score["classes"] if c != "O"]
    groups: dict[tuple[str, str], list[ResultRow]] = {}
    for r in rows:
        groups.setdefault((system_of(r.exp), r.set), []).append(r)
    head = ["system", "set", "seeds"] + [f"{c} F1" for c in classes] + ["overall F1", "overall F1 range", "SER",
                                                                          "epochs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (system, name), runs in groups.items():
        seeds = [m.group(1) for m in (SEED_TAG.search(r.exp) for r in runs) if m]
        f1 = [r.score["overall"]["f1"] for r in runs]
        unnamed = f"{len(runs)} run" + ("s" if len(runs) > 1 else "")  # some run names no seed
        cells = [system, name, ", ".join(seeds) if len(seeds) == len(runs) else unnamed]
        cells += [_mean_sd([r.score["per_class"][c]["f1"] for r in runs if c in r.score["per_class"]])
                  for c in classes]
        ser = [r.score["SER"] for r in runs if r.score.get("SER") is not None]
        epochs = sorted({len(r.history) for r in runs if r.history})
        cells += [f"**{_mean_sd(f1)}**", f"{_f(min(f1))}-{_f(max(f1))}", _mean_sd(ser),
                  "-" if not epochs else str(epochs[0]) if len(epochs) == 1 else f"{epochs[0]}-{epochs[-1]}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
