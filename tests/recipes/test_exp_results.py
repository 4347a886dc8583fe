"""The files the recipes' stages write for people (punctkit.report): exp/<tag>/RESULTS.md (stage 6) and the
demo's readable words (stage 8), on small hand-made experiments and data directories (no training)."""
import json
import re
import subprocess
import sys
from pathlib import Path

from punctkit.report import demo_text, experiment_markdown
from punctkit.score import score_files, write_score


def _twocol(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{w}\t{lab}\n" for w, lab in rows))
    return path


def _exp(tmp_path: Path) -> Path:
    """An experiment as the recipe leaves it: train.log, history.json, config.yaml, run.sh, and two test sets
    scored, `cased` (a reference in its case) and `plain` (lower case: no case figures), plain twice."""
    exp = tmp_path / "exp" / "sys_a"
    words = "So what do you think I said NASA".split()
    marks = ["O", "O", "O", "O", "QUESTION", "O", "COMMA", "PERIOD"]
    ref = _twocol(tmp_path / "cased", list(zip(words, marks)))
    hyp_words = "so what do you think I said Nasa".split()  # one cased word right (I), one wrong (Nasa)
    hyp = _twocol(tmp_path / "cased_hyp", list(zip(hyp_words, marks[:6] + ["O", "PERIOD"])))
    write_score(score_files(ref, hyp), exp / "decode_cased")
    low = [w.lower() for w in words]
    ref = _twocol(tmp_path / "plain", list(zip(low, marks)))
    write_score(score_files(ref, ref), exp / "decode_plain")
    write_score(score_files(ref, _twocol(tmp_path / "plain_hyp", [(w, "O") for w in low])), exp / "decode_plain_beam1")
    (exp / "history.json").write_text(json.dumps([{"epoch": 1, "valid_f1": 40.0, "minutes": 1.5},
                                                  {"epoch": 2, "valid_f1": 55.25, "minutes": 3.0}]))
    (exp / "train.log").write_text("2026-01-01 00:00:00 model drnn_lwma: 2069252 parameters (2069252 trainable)\n")
    (exp / "config.yaml").write_text("train:\n  epochs: 2\n  seed: 1\n")
    (exp / "run.sh").write_text("#!/usr/bin/env bash\n# Reruns it\ncd /r && ./punct.sh --tag sys_a --stage 3 \"$@\"; "
                                "exit $?\n")
    return exp


def test_results_md_has_environment_command_config_and_a_table_per_set(tmp_path: Path) -> None:
    exp = _exp(tmp_path)
    md = experiment_markdown(exp)
    env = md[md.index("## Environment"):md.index("## Command")]
    for line in ("- date: `", "- CPU: ", "vector extensions: `", "- python: `", "torch: `", "punctkit: `", "- git: ",
                 "- model parameters: 2,069,252 (2,069,252 trainable), drnn_lwma",
                 "- training: 2 epochs, 3.0 min; best epoch 2 (dev F1 55.2)"):
        assert line in env, line
    assert re.search(r"- date: `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", env)
    assert '    cd /r && ./punct.sh --tag sys_a --stage 3 "$@"; exit $?\n' in md
    assert "```yaml\ntrain:\n  epochs: 2\n  seed: 1\n```" in md
    tables = md[md.index("## Results"):]
    assert tables.count("### ") == 2 and "### cased" in tables and "### plain" in tables
    plain = tables[tables.index("### plain"):]
    assert "| decode_plain | 100.0/100.0/100.0 |" in plain and "| decode_plain_beam1 |" in plain
    assert "Case of" not in plain  # lower-case data: no case table
    cased = tables[tables.index("### cased"):tables.index("### plain")]
    assert "| decode | COMMA P/R/F1 | PERIOD P/R/F1 | QUESTION P/R/F1 | overall P | overall R | overall F1 | SER |" \
        in cased
    head = next(line for line in cased.splitlines() if line.startswith("| decode | L P/R/F1"))
    assert head.endswith("| exact form P/R/F1 | exact form inside sentences P/R/F1 |")
    row = next(line for line in cased.splitlines() if line.startswith("| decode_cased |") and "/" in line
               and line.count("|") == head.count("|"))
    score = json.loads((exp / "decode_cased" / "score.json").read_text())["case"]["exact"]
    assert (score["precision"], score["hits"]) == (50.0, 1)
    prf = "/".join(f"{score[k]:.1f}" for k in ("precision", "recall", "f1"))
    assert row.split(" | ")[-2] == prf == "50.0/33.3/40.0"


def test_results_md_from_the_command_line(tmp_path: Path) -> None:
    exp = _exp(tmp_path)
    (exp / "run.sh").unlink()  # an experiment trained elsewhere: the rest is still written
    p = subprocess.run([sys.executable, "-m", "punctkit.report", "experiment", str(exp)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    md = (exp / "RESULTS.md").read_text()
    assert md.startswith("# sys_a\n") and "(no run.sh:" in md and "### cased" in md
    p = subprocess.run([sys.executable, "-m", "punctkit.report", "experiment", str(tmp_path / "none")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "experiment directory not found" in p.stderr


def test_demo_words_join_iwslt_contractions(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    tokens = "i 'm sure they do n't know it 's late we ca n't".split()
    labels = "O O COMMA O O O PERIOD O O QUESTION O O PERIOD".split()
    (data / "text").write_text(f"a1 {' '.join(tokens[:7])}\na2 {' '.join(tokens[7:])}\n")
    (data / "labels").write_text(f"a1 {' '.join(labels[:7])}\na2 {' '.join(labels[7:])}\n")
    assert demo_text(data, 60) == ("i'm sure they don't know it's late we can't",
                                   "I'm sure, they don't know. It's late? We can't.")
    assert demo_text(data, 4) == ("i'm sure they", "I'm sure, they")  # 4 of the data's words (tokens)
    p = subprocess.run([sys.executable, "-m", "punctkit.report", "demo", str(data), str(tmp_path / "demo"),
                        "--words", "9"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "demo" / "words.txt").read_text() == "i'm sure they don't know it's\n"
    assert (tmp_path / "demo" / "ref.txt").read_text() == "I'm sure, they don't know. It's\n"
