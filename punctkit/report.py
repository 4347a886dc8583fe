"""Results tables, as ESPnet's `show_result.sh`: experiment dirs -> one Markdown table.

Each row is one decoded set of one experiment: `EXP/decode_SET/score.json`
(written by `punctkit score -o`), with the training run's length from
`EXP/history.json` (epochs, minutes of training, the best dev F1 and its epoch).
Nothing is recomputed: the table shows exactly what the recipe wrote. `markdown_by_seed`
folds the runs of one system over seeds (`exp/<system>_seed<N>`) into one row: mean ± spread.

`experiment_markdown` is one experiment's `exp/<tag>/RESULTS.md` (ESPnet's show_asr_result.sh), which
stage 6 of the recipes writes: the environment, the command (`exp/<tag>/run.sh`), the config and one
table per test set. `demo_text` gives stage 8 (the demo) the first words of a test set, readable.
Both run as `python -m punctkit.report {experiment,demo} ...` from recipes/TEMPLATE/punct.sh.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import platform
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punctkit import __version__
from punctkit.data.datadir import read_data_dir
from punctkit.data.tokenize import detokenize
from punctkit.files import PunctkitError, atomic_write, read_json_file
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


# ------------------------------------------------------------------ one experiment's RESULTS.md

SIMD_FLAGS = re.compile(r"^(sse\S*|ssse3|avx\S*|fma\S*|f16c|amx\S*|neon|asimd\S*|sve\S*)$")  # those that change speed
PARAMS_LINE = re.compile(r"model (\S+): (\d+) parameters \((\d+) trainable\)")  # the trainer's line in train.log


def _cpu() -> tuple[str, str]:
    """(the CPU's model and core count, its vector-extension flags) from /proc/cpuinfo; `unknown` elsewhere."""
    try:
        info = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or "unknown", "unknown"
    fields: dict[str, str] = {}
    cores = 0
    for line in info.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        cores += key == "processor"
        fields.setdefault(key, value.strip())
    model = fields.get("model name") or fields.get("Model") or fields.get("CPU part") or "unknown"
    flags = [f for f in (fields.get("flags") or fields.get("Features") or "").split() if SIMD_FLAGS.match(f)]
    return f"{model} ({cores} logical cores)", " ".join(flags) or "none"


def _git(*args: str) -> str:
    """A git command's output in punctkit's checkout ('' where there is no git or no checkout)."""
    try:
        p = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _parameters(exp: Path) -> str:
    """The model's parameter count, as the trainer logged it (exp/train.log)."""
    log = exp / "train.log"
    found = PARAMS_LINE.findall(log.read_text(errors="replace")) if log.is_file() else []
    if not found:
        return "unknown (no `parameters` line in train.log)"
    kind, total, trainable = found[-1]
    return f"{int(total):,} ({int(trainable):,} trainable), {kind}"


def _training(history: list[dict[str, Any]]) -> str:
    if not history:
        return "no history.json"
    row = ResultRow("", "", {}, history)
    best = row.best
    text = f"{len(history)} epochs, {_f(row.train_minutes)} min"
    return text + (f"; best epoch {best[0]} (dev F1 {best[1]:.1f})" if best else "")


def _command(exp: Path) -> str | None:
    """The command line of `exp/run.sh` (its last line that is not a comment)."""
    script = exp / "run.sh"
    if not script.is_file():
        return None
    lines = [ln for ln in script.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return lines[-1] if lines else None


def _prf(m: dict[str, Any] | None) -> str:
    return "/".join(_f(m.get(k)) for k in ("precision", "recall", "f1")) if isinstance(m, dict) else "-"


def _set_tables(name: str, rows: list[ResultRow]) -> list[str]:
    """The tables of one test set: punctuation (a row per decoding of it), then case where the data has case."""
    classes = [c for c in rows[0].score["classes"] if c != "O"]
    head = ["decode"] + [f"{c} P/R/F1" for c in classes] + ["overall P", "overall R", "overall F1", "SER"]
    out = [f"### {name}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        o = r.score["overall"]
        cells = [r.set] + [_prf(r.score["per_class"].get(c)) for c in classes]
        cells += [_f(o["precision"]), _f(o["recall"]), f"**{_f(o['f1'])}**", _ser(r.score)]
        out.append("| " + " | ".join(cells) + " |")
    cased = [r for r in rows if isinstance(r.score.get("case"), dict)]
    if cased:
        case_classes = list(cased[0].score["case"].get("classes") or {})
        head = (["decode"] + [f"{c} P/R/F1" for c in case_classes]
                + ["exact form P/R/F1", "exact form inside sentences P/R/F1"])
        out += ["", f"Case of {name} (classes of the words' exact forms; exact form: the word written as the "
                "reference writes it):", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in cased:
            case = r.score["case"]
            cells = [r.set] + [_prf((case.get("classes") or {}).get(c)) for c in case_classes]
            cells += [_prf(case.get("exact")), _prf(case.get("exact_inside"))]
            out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def experiment_markdown(exp: str | Path, now: datetime.datetime | None = None) -> str:
    """`exp/<tag>/RESULTS.md` of one experiment, as ESPnet's show_asr_result.sh writes it: the environment
    (date, CPU and its vector extensions, python, torch, punctkit and its git commit, the model's parameter
    count, the training run's length), the command that reruns it (`exp/<tag>/run.sh`), the config it was
    trained with (`exp/<tag>/config.yaml`, inline) and one table per test set (per-class and overall P/R/F1,
    SER; case figures where the data has case), each row one decoding (`decode_<set>[_<dtag>]`)."""
    exp = Path(exp)
    rows = collect([exp])
    now = now or datetime.datetime.now().astimezone()
    cpu, flags = _cpu()
    commit = _git("rev-parse", "HEAD")
    if commit:
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        commit = f"`{commit}` ({_git('log', '-1', '--format=%cd', '--date=iso-strict')}" + \
                 (", with uncommitted changes)" if dirty else ")")
    out = [f"# {exp.name}", "",
           "Written by `python -m punctkit.report experiment` (stage 6 of recipes/TEMPLATE/punct.sh) from the "
           "experiment's files; rerun the experiment with `run.sh` beside this file.", "",
           "## Environment", "",
           f"- date: `{now.isoformat(timespec='seconds')}`",
           f"- CPU: {cpu}; vector extensions: `{flags}`",
           f"- python: `{platform.python_version()}`; torch: `{_torch_version()}`; punctkit: `{__version__}`",
           f"- git: {commit or 'unknown (not a git checkout)'}",
           f"- model parameters: {_parameters(exp)}",
           f"- training: {_training(rows[0].history)}", ""]
    command = _command(exp)
    out += ["## Command", "",
            "In the recipe's directory (`run.sh` here does it; extra options go after it, e.g. `--stage 5`):", "",
            f"    {command}" if command else "    (no run.sh: the experiment was not trained by this recipe's stage 4)",
            ""]
    config = exp / "config.yaml"
    if config.is_file():
        out += ["## Config", "", "<details><summary>config.yaml (the run's config, all defaults filled in)"
                "</summary>", "", "```yaml", config.read_text().rstrip("\n"), "```", "", "</details>", ""]
    out += ["## Results", "", "Overall F1 and SER in percent; P/R/F1 per class; SER: slot error rate.", ""]
    by_set: dict[str, list[ResultRow]] = {}
    for r in rows:
        by_set.setdefault(Path(str(r.score.get("ref") or r.set)).name, []).append(r)
    for name, set_rows in by_set.items():
        out += _set_tables(name, [ResultRow(r.exp, f"decode_{r.set}", r.score, r.history) for r in set_rows])
    return "\n".join(out).rstrip("\n") + "\n"


# ------------------------------------------------------------------ the demo's words (stage 8)

def demo_text(data_dir: str | Path, n_words: int) -> tuple[str, str]:
    """The first `n_words` words of a data directory as the recipes' demo shows them (stage 8): (the words
    as a recognizer writes them, unpunctuated, in their case; the reference: the same words with their
    marks). Both are readable: IWSLT's split contractions are joined (`i 'm` -> `i'm`, `do n't` -> `don't`),
    and the reference is written as `punctkit punctuate` writes a model's output (case from the labels
    where the data has case, else sentence starts and `I` capitalised)."""
    d = read_data_dir(data_dir)
    words: list[str] = []
    labels: list[str] = []
    for u in d.utterances:
        words += u.words[:n_words - len(words)]
        labels += u.labels[:n_words - len(labels)]
        if len(words) >= n_words:
            break
    return detokenize(words, ["O"] * len(words), capitalize=False), detokenize(words, labels)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m punctkit.report", description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("experiment", help="write EXP/RESULTS.md (environment, command, config, tables)")
    e.add_argument("exp", type=Path)
    e.add_argument("-o", "--out", type=Path, help="output file (default: EXP/RESULTS.md; - for standard output)")
    d = sub.add_parser("demo", help="write OUT/words.txt and OUT/ref.txt: the first words of a data dir, readable")
    d.add_argument("data", type=Path)
    d.add_argument("out", type=Path)
    d.add_argument("--words", type=int, default=60, help="how many words (default 60)")
    args = ap.parse_args(argv)
    try:
        if args.what == "experiment":
            text = experiment_markdown(args.exp)
            if str(args.out) == "-":
                sys.stdout.write(text)
            else:
                with atomic_write(args.out or args.exp / "RESULTS.md") as f:
                    f.write(text)
        else:
            words, ref = demo_text(args.data, args.words)
            for name, text in (("words.txt", words), ("ref.txt", ref)):
                with atomic_write(args.out / name) as f:
                    f.write(text + "\n")
    except PunctkitError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
