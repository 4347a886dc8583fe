"""recipes/ted local/meetings.py, blind.py and score_scp.py: the meetings as Rev's NLP files (turns kept, markers
and ICSI's split contractions read right), the inputs a user passes made from references, and a set scored as one
with the share of turn changes left without a mark."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "recipes" / "ted" / "local"
MEETINGS = ROOT.parent / "shared" / "data" / "meetings"


def run(script: str, *args, cwd: Path) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(LOCAL / script), *map(str, args)], cwd=cwd, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def rows(path: Path) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags"
    return [ln.split("|") for ln in lines[1:]]


def test_meetings_as_nlp_keep_turns_and_read_markers_and_contractions(tmp_path: Path) -> None:
    turns = [{"speaker": "Grad C", "text": "Yeah , we 're on . So {disfmarker} Morgan wants it ."},
             {"speaker": "PhD D", "text": "Mm - hmm . It do n't {vocalsound} move , the front - end ?"},
             {"speaker": "Grad C", "text": ". @ @ \" OK \" {gap}"}]
    (tmp_path / "m.jsonl").write_text(json.dumps({"meeting": "Bdb 001", "domain": "ICSI", "turns": turns}) + "\n")
    scp = run("meetings.py", "nlp", tmp_path / "m.jsonl", tmp_path / "out", cwd=tmp_path).stdout.split()
    assert scp[0] == "Bdb_001" and Path(scp[1]).name == "Bdb_001.nlp"
    got = rows(Path(scp[1]))
    assert [(r[0], r[1], r[4]) for r in got] == [
        ("Yeah", "0", ","), ("we're", "0", ""), ("on", "0", "."), ("So", "0", ""), ("Morgan", "0", ""),
        ("wants", "0", ""), ("it", "0", "."),
        ("Mm-hmm", "1", "."), ("It", "1", ""), ("don't", "1", ""), ("move", "1", ","), ("the", "1", ""),
        ("front-end", "1", "?"),
        ("OK", "0", "")]
    assert [r[6] for r in got[:3]] == ["UC", "LC", "LC"] and got[-1][6] == "CA"
    assert all(r[2] == r[3] == "" for r in got)  # the meetings have no times
    # the committees' text has its marks attached to the words
    turns = [{"speaker": "The Chair",
              "text": "I call the meeting to order. Thank you, Mr. Chair. \"Yes,\" so... (COVID-19)?"}]
    (tmp_path / "c.jsonl").write_text(json.dumps({"meeting": "covid_2", "turns": turns}) + "\n")
    scp = run("meetings.py", "nlp", tmp_path / "c.jsonl", tmp_path / "out", cwd=tmp_path).stdout.split()
    assert [(r[0], r[4]) for r in rows(Path(scp[1]))] == [
        ("I", ""), ("call", ""), ("the", ""), ("meeting", ""), ("to", ""), ("order", "."), ("Thank", ""), ("you", ","),
        ("Mr", "."), ("Chair", "."), ("Yes", ","), ("so", ""), ("COVID-19", "?")]


def test_blind_input_keeps_rows_speakers_and_times_only(tmp_path: Path) -> None:
    ref = tmp_path / "ref.nlp"
    ref.write_text("token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|ali_comment\n"
                   "Good|0|0.1|0.4|,||UC|[]|\n<laugh>|0||||||[]|\nNASA|1|0.5|0.9|.||CA|['0:ORG']|\n")
    run("blind.py", ref, tmp_path / "b.nlp", cwd=tmp_path)
    assert (tmp_path / "b.nlp").read_text().splitlines()[1:] == [
        "good|0|0.1|0.4||||[]|", "<laugh>|0||||||[]|", "nasa|1|0.5|0.9||||['0:ORG']|"]
    run("blind.py", ref, tmp_path / "w.nlp", "--no-speakers", "--no-times", cwd=tmp_path)
    assert [r.split("|")[1:4] for r in (tmp_path / "w.nlp").read_text().splitlines()[1:]] == [["0", "", ""]] * 3


@pytest.mark.skipif(not (MEETINGS / "val.jsonl").is_file(), reason=f"meetings not found at {MEETINGS}")
def test_real_meetings_punctuated_and_scored_with_turn_changes(tmp_path: Path) -> None:
    """Two real meetings through meetings.py, blind.py, `punctkit punctuate --format nlp` and score_scp.py: the
    words pass through (same rows), and the summary counts the turn changes without a mark on both sides."""
    scp = run("meetings.py", "nlp", MEETINGS / "val.jsonl", tmp_path / "ref", "--max-meetings", "2",
              cwd=tmp_path).stdout
    (tmp_path / "ref.scp").write_text(scp)
    blind = run("blind.py", "--scp", tmp_path / "ref.scp", tmp_path / "blind", cwd=tmp_path).stdout
    (tmp_path / "hyp").mkdir()
    for line in blind.splitlines():
        uid, path = line.split()
        subprocess.run(["punctkit", "punctuate", path, "--format", "nlp", "-o", tmp_path / "hyp" / f"{uid}.nlp"],
                       check=True, capture_output=True, timeout=600)
        ref = rows(tmp_path / "ref" / f"{uid}.nlp")
        hyp = rows(tmp_path / "hyp" / f"{uid}.nlp")
        assert [r[0].lower() for r in hyp] == [r[0].lower() for r in ref] and [r[1] for r in hyp] == [r[1] for r in ref]
    last = run("score_scp.py", tmp_path / "ref.scp", tmp_path / "hyp", cwd=tmp_path).stdout.splitlines()[-1]
    assert last.startswith("punctuation F1 ") and "turn changes without a mark" in last and "2 documents" in last
