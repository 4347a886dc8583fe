"""`punctkit results`: experiment dirs' score.json + history.json -> one Markdown table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from punctkit.cli import app
from punctkit.files import PunctkitError
from punctkit.report import collect, markdown, markdown_by_seed
from punctkit.score import score_files, write_score


def _twocol(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{w}\t{lab}\n" for w, lab in rows))
    return path


def _exp(tmp_path: Path, name: str, ref: Path, hyp: Path, history: list[dict] | None) -> Path:
    exp = tmp_path / name
    write_score(score_files(ref, hyp), exp / "decode_test")
    if history is not None:
        (exp / "history.json").write_text(json.dumps(history))
    return exp


@pytest.fixture
def exps(tmp_path: Path) -> tuple[Path, Path]:
    words = "so what do you think i said no".split()
    ref = _twocol(tmp_path / "ref", list(zip(words, ["O", "O", "O", "O", "QUESTION", "O", "COMMA", "PERIOD"])))
    # one correct QUESTION and PERIOD, COMMA deleted, a PERIOD inserted after "so"
    hyp = _twocol(tmp_path / "hyp", list(zip(words, ["PERIOD", "O", "O", "O", "QUESTION", "O", "O", "PERIOD"])))
    hist = [{"epoch": 1, "valid_f1": 40.0, "minutes": 1.5}, {"epoch": 2, "valid_f1": 55.25, "minutes": 3.0},
            {"epoch": 3, "valid_f1": 50.0, "minutes": 4.25}]
    return _exp(tmp_path, "sys_a", ref, hyp, hist), _exp(tmp_path, "sys_b", ref, ref, None)


def test_table_shows_the_written_scores_and_training_length(exps: tuple[Path, Path]) -> None:
    rows = collect(list(exps))
    assert [(r.exp, r.set) for r in rows] == [("sys_a", "test"), ("sys_b", "test")]
    assert rows[0].train_minutes == 4.25 and rows[0].best == (2, 55.25)
    table = markdown(rows).splitlines()
    assert table[0].startswith("| system | set | COMMA P/R/F1 | PERIOD P/R/F1 | QUESTION P/R/F1 | overall P |")
    # sys_a: 2 correct of 3 predicted, 3 in the reference -> P = R = F1 = 66.7; SER = (0+1+1)/3
    a = [c.strip() for c in table[2].strip("|").split("|")]
    assert a[:5] == ["sys_a", "test", "0.0/0.0/0.0", "50.0/100.0/66.7", "100.0/100.0/100.0"]
    assert a[5:] == ["66.7", "66.7", "**66.7**", "66.7", "4.2", "3", "2 (55.2)"]
    b = [c.strip() for c in table[3].strip("|").split("|")]
    assert b[5:] == ["100.0", "100.0", "**100.0**", "0.0", "-", "-", "-"]


def test_set_filter_and_cli(exps: tuple[Path, Path]) -> None:
    assert collect(list(exps), ["other"]) == []
    r = CliRunner().invoke(app, ["results", str(exps[0]), str(exps[1]), "--set", "test"])
    assert r.exit_code == 0, r.output
    assert r.output.count("\n") == 4 and "| sys_b | test |" in r.output


def test_errors_are_one_line(exps: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(PunctkitError, match="experiment directory not found"):
        collect([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(PunctkitError, match="no decode_\\*/score.json"):
        collect([tmp_path / "empty"])
    (exps[0] / "history.json").write_text("{broken")
    with pytest.raises(PunctkitError, match="history.json: not valid JSON"):
        collect([exps[0]])
    with pytest.raises(PunctkitError, match="no results"):
        markdown([])
    (exps[1] / "decode_test" / "score.json").write_text('{"classes": []}')
    with pytest.raises(PunctkitError, match="decode_test/score.json: no 'overall' section"):
        collect([exps[1]])


def test_exact_form_case_columns_when_a_score_has_them(exps: tuple[Path, Path], tmp_path: Path) -> None:
    """A cased reference adds the exact-form case F1 (all words, inside sentences); a score without
    case figures shows `-` there."""
    ref, hyp = tmp_path / "cased_ref.txt", tmp_path / "cased_hyp.txt"
    ref.write_text("The NASA team met in New York.\n")
    hyp.write_text("the NASA Team met in new York.\n")  # exact F1 57.1, inside 66.7 (tests/test_score.py)
    cased = _exp(tmp_path, "sys_c", ref, hyp, None)
    table = markdown(collect([cased, exps[1]])).splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    at = head.index("exact case F1")
    assert head[at:at + 2] == ["exact case F1", "exact case F1 inside"] and head[at - 1] == "SER"
    assert [c.strip() for c in table[2].strip("|").split("|")][at:at + 2] == ["57.1", "66.7"]
    assert [c.strip() for c in table[3].strip("|").split("|")][at:at + 2] == ["-", "-"]
    # no score with case figures: no such columns
    assert "exact case" not in markdown(collect(list(exps)))


def test_seeds_fold_into_one_row_per_system(tmp_path: Path) -> None:
    """`--seeds`: runs named <system>_seed<N> become one row (mean ± sample sd, range, epochs);
    a run with no seed in its name stays a row of its own; unequal training lengths show as a range."""
    words = "so what do you think i said no".split()
    ref = _twocol(tmp_path / "ref", list(zip(words, ["O", "O", "O", "O", "QUESTION", "O", "COMMA", "PERIOD"])))
    hyp = _twocol(tmp_path / "hyp", list(zip(words, ["PERIOD", "O", "O", "O", "QUESTION", "O", "O", "PERIOD"])))
    h = [{"epoch": e, "valid_f1": 50.0, "minutes": e} for e in (1, 2, 3)]
    exps = [_exp(tmp_path, "ff2_seed1", ref, hyp, h), _exp(tmp_path, "ff2_seed2", ref, ref, h[:2]),
            _exp(tmp_path, "base", ref, hyp, h)]
    table = markdown_by_seed(collect(exps)).splitlines()
    assert table[0].split("|")[1:4] == [" system ", " set ", " seeds "]
    ff2 = [c.strip() for c in table[2].strip("|").split("|")]
    # overall F1 66.7 and 100.0: mean 83.3, sd 23.6; SER 66.7 and 0.0; COMMA F1 0 and 100
    assert ff2 == ["ff2", "test", "1, 2", "50.0 ± 70.7", "83.3 ± 23.6", "100.0 ± 0.0", "**83.3 ± 23.6**",
                   "66.7-100.0", "33.3 ± 47.1", "2-3"]
    base = [c.strip() for c in table[3].strip("|").split("|")]
    assert base[:3] == ["base", "test", "1 run"] and base[6:] == ["**66.7**", "66.7-66.7", "66.7", "3"]
    r = CliRunner().invoke(app, ["results", "--seeds", *map(str, exps)])
    assert r.exit_code == 0, r.output
    assert r.output.count("\n") == 4 and "| ff2 | test | 1, 2 |" in r.output
