"""punctkit score: metrics against published figures, C/S/D/I by hand, merging, alignment, bootstrap."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from punctkit.cli import app
from punctkit.files import PunctkitError
from punctkit.score import (
    Transcript,
    bootstrap,
    format_report,
    read_transcript,
    score,
    score_files,
    write_score,
)
from punctkit.text.edit_align import align_words

IWSLT = Path(__file__).resolve().parents[2] / "shared/data/iwslt"
WORDS = ["so", "we", "went", "home", "and", "then", "you", "see", "it", "now"]

# Faber 2020, table 5.7 (rows ref, columns hyp): Blank, Period, Comma, Questionmark.
FABER_CLASSES = ["O", "PERIOD", "COMMA", "QUESTION"]
FABER_MATRIX = [
    [15223, 128, 140, 10],
    [290, 586, 117, 1],
    [564, 222, 460, 6],
    [30, 17, 5, 32],
]
# Faber 2020, table 5.8: case-aware targets (L/U x blank . , ?).
FABER_CASE_CLASSES = ["L_O", "U_O", "L_PERIOD", "L_COMMA", "L_QUESTION", "U_PERIOD", "U_COMMA", "U_QUESTION"]
FABER_CASE_MATRIX = [
    [13346, 263, 98, 148, 11, 1, 6, 0],
    [384, 1201, 12, 6, 2, 7, 16, 0],
    [193, 10, 598, 111, 1, 6, 5, 0],
    [403, 12, 181, 493, 7, 1, 6, 0],
    [20, 0, 13, 4, 43, 0, 0, 0],
    [7, 10, 10, 8, 0, 26, 9, 0],
    [16, 22, 11, 5, 1, 17, 77, 0],
    [0, 1, 0, 1, 1, 0, 0, 1],
]


def write_twocol(path: Path, words: list[str], labels: list[str], utt_len: int | None = 100) -> Path:
    """Write `word<TAB>LABEL` lines, a blank line after every `utt_len` words."""
    lines = []
    for i, (w, lab) in enumerate(zip(words, labels)):
        if utt_len and i and i % utt_len == 0:
            lines.append("")
        lines.append(f"{w}\t{lab}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def realise(matrix: list[list[int]], classes: list[str], seed: int = 7) -> tuple[list[str], list[str], list[str]]:
    """A shuffled word sequence with REF and HYP labels whose confusion matrix is `matrix`."""
    pairs = [(classes[r], classes[h]) for r, row in enumerate(matrix) for h, n in enumerate(row) for _ in range(n)]
    random.Random(seed).shuffle(pairs)
    words = [WORDS[i % len(WORDS)] for i in range(len(pairs))]
    return words, [r for r, _ in pairs], [h for _, h in pairs]


@pytest.fixture
def faber(tmp_path: Path) -> tuple[Path, Path]:
    words, ref, hyp = realise(FABER_MATRIX, FABER_CLASSES)
    return write_twocol(tmp_path / "ref.txt", words, ref), write_twocol(tmp_path / "hyp.txt", words, hyp)


def r1(x: float) -> float:
    return round(x + 1e-9, 1)


def check_faber(res: dict) -> None:
    """Table 5.6, first row (no casing in source or targets)."""
    o = res["overall"]
    assert (r1(o["precision"]), r1(o["recall"]), r1(o["f1"])) == (62.5, 46.3, 53.2)
    assert (r1(res["CER"]), r1(res["SER"])) == (8.6, 65.7)
    want = {"COMMA": (63.7, 36.7, 46.6), "PERIOD": (61.5, 59.0, 60.2), "QUESTION": (65.3, 38.1, 48.1)}
    for cls, prf in want.items():
        m = res["per_class"][cls]
        assert (r1(m["precision"]), r1(m["recall"]), r1(m["f1"])) == prf, cls


def test_faber_table_5_6_from_confusion_matrix(faber: tuple[Path, Path]) -> None:
    res = score_files(*faber)
    check_faber(res)
    # the confusion matrix comes back as written, in our class order
    assert res["confusion"]["labels"] == ["O", "COMMA", "PERIOD", "QUESTION"]
    perm = [FABER_CLASSES.index(c) for c in res["confusion"]["labels"]]
    assert res["confusion"]["matrix"] == [[FABER_MATRIX[r][h] for h in perm] for r in perm]
    assert res["counts"]["slots"] == 17831 and res["counts"]["ref_utterances"] == 179
    assert res["alignment"] is None and res["case"] is None
    text = format_report(res)
    assert "overall" in text and "62.5" in text and "SER 65.7" in text and "CER 8.6" in text


def test_faber_through_cli_json(faber: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "exp"
    r = CliRunner().invoke(app, ["score", str(faber[0]), str(faber[1]), "--json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    check_faber(res)
    assert json.loads((out / "score.json").read_text()) == res
    assert "SER 65.7" in (out / "score.txt").read_text()


def test_faber_case_aware_table_5_8(tmp_path: Path) -> None:
    """Case P/R/F1 of table 5.6 row 2 from the confusion matrix of table 5.8."""
    words, ref, hyp = realise(FABER_CASE_MATRIX, FABER_CASE_CLASSES)
    res = score_files(write_twocol(tmp_path / "r", words, ref), write_twocol(tmp_path / "h", words, hyp))
    case = res["case"]
    assert [r1(case["L"][k]) for k in ("precision", "recall", "f1")] == [97.1, 98.1, 97.6]
    # U: 1387 correct of 1697 predicted, 1851 reference; F1 = 78.18 (the paper prints 78.1)
    assert [r1(case["U"][k]) for k in ("precision", "recall")] == [81.7, 74.9]
    assert case["U"]["f1"] == pytest.approx(200 * 1387 / (1697 + 1851))
    # punctuation is scored on the marks: 640 + 581 + 45 correct of 1943 predicted, 2330 in the reference;
    # the paper truncates some cells of this row (P 65.16 -> 65.1, F1 59.26 -> 59.2)
    o, c = res["overall"], res["per_class"]["COMMA"]
    assert (o["correct"], o["predicted"], o["support"]) == (1266, 1943, 2330)
    assert r1(o["recall"]) == 54.3
    assert [r1(c[k]) for k in ("precision", "recall", "f1")] == [64.9, 46.4, 54.1]
    q = res["per_class"]["QUESTION"]
    assert r1(q["recall"]) == 53.6 and (q["correct"], q["predicted"]) == (45, 67)
    assert "case (U capitalised" in format_report(res)
    # exact forms (the word capitalised by U): a hit is a U-U pair, so exact P/R are U's
    assert case["scheme"] == "faber" and case["classes"]["U"] == case["U"]
    assert (case["exact"]["hits"], case["exact"]["hyp_words"], case["exact"]["ref_words"]) == (1387, 1697, 1851)


# Hand-made pair: C at so/see, S at went (PERIOD->COMMA), D at you (QUESTION->O), I at home and yes.
HAND_REF = [("so", "COMMA"), ("we", "O"), ("went", "PERIOD"), ("home", "O"), ("did", "O"),
            ("you", "QUESTION"), ("see", "PERIOD"), ("it", "O"), ("yes", "O")]
HAND_HYP_P2 = "so ,COMMA we went ,COMMA home .PERIOD did you see .PERIOD it yes ,COMMA\n"


@pytest.fixture
def hand(tmp_path: Path) -> tuple[Path, Path]:
    ref = write_twocol(tmp_path / "ref", [w for w, _ in HAND_REF], [lab for _, lab in HAND_REF])
    hyp = tmp_path / "hyp.p2"
    hyp.write_text(HAND_HYP_P2, encoding="utf-8")
    return ref, hyp


def test_hand_made_c_s_d_i(hand: tuple[Path, Path]) -> None:
    res = score_files(*hand)  # twocol reference, punctuator2 hypothesis
    assert (res["C"], res["S"], res["D"], res["I"]) == (2, 1, 1, 2)
    assert res["overall"]["precision"] == pytest.approx(40.0)  # 2 / 5 predicted marks
    assert res["overall"]["recall"] == pytest.approx(50.0)  # 2 / 4 reference marks
    assert res["overall"]["f1"] == pytest.approx(400 / 9)
    assert res["SER"] == pytest.approx(100.0) and res["CER"] == pytest.approx(400 / 9)
    assert res["per_class"]["COMMA"]["precision"] == pytest.approx(100 / 3)
    assert res["per_class"]["COMMA"]["recall"] == pytest.approx(100.0)
    assert res["per_class"]["PERIOD"]["f1"] == pytest.approx(50.0)
    assert res["per_class"]["QUESTION"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                            "support": 1, "predicted": 0, "correct": 0}
    assert res["confusion"]["matrix"] == [[3, 1, 1, 0], [0, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 0]]


def test_map_merges_classes(hand: tuple[Path, Path], faber: tuple[Path, Path]) -> None:
    res = score_files(*hand, mapping=["QUESTION=PERIOD"])
    assert res["classes"] == ["COMMA", "PERIOD"] and res["map"] == {"QUESTION": "PERIOD"}
    assert res["per_class"]["PERIOD"]["support"] == 3
    assert (res["C"], res["S"], res["D"], res["I"]) == (2, 1, 1, 2)
    # Faber: the 1 PERIOD->QUESTION and 17 QUESTION->PERIOD substitutions become correct
    res = score_files(*faber, mapping=["QUESTION=PERIOD"])
    assert res["C"] == 586 + 460 + 32 + 1 + 17 and res["per_class"]["PERIOD"]["support"] == 994 + 84
    # mapping a mark to O removes it from both sides
    res = score_files(*hand, mapping=["COMMA=O,QUESTION=PERIOD"])
    assert res["classes"] == ["PERIOD"] and res["overall"]["support"] == 3 and res["I"] == 1
    with pytest.raises(PunctkitError, match="--map expects"):
        score_files(*hand, mapping=["QUESTION"])
    r = CliRunner().invoke(app, ["score", str(hand[0]), str(hand[1]), "--map", "QUESTION=PERIOD", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["classes"] == ["COMMA", "PERIOD"]


def test_mismatched_words_name_the_position(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(250)]
    labels = ["O"] * 250
    ref = write_twocol(tmp_path / "ref", words, labels)
    changed = list(words)
    changed[123] = "other"
    hyp = write_twocol(tmp_path / "hyp", changed, labels)
    with pytest.raises(PunctkitError) as e:
        score_files(ref, hyp)
    msg = str(e.value)
    assert "word 124" in msg and "'w123'" in msg and "'other'" in msg
    assert "utterance ref-000002 word 24" in msg and "--align" in msg
    short = write_twocol(tmp_path / "short", words[:200], labels[:200])
    with pytest.raises(PunctkitError, match=r"ref has 250 words, hyp 200; first extra word 201 .*'w200'"):
        score_files(ref, short)
    # through the command: one line on stderr, exit status 1
    p = subprocess.run([sys.executable, "-m", "punctkit.cli", "score", str(ref), str(hyp)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "word 124" in p.stderr


ALIGN_REF = [("i", "O"), ("think", "COMMA"), ("that", "COMMA"), ("we", "O"), ("should", "O"),
             ("go", "PERIOD"), ("then", "O"), ("you", "O"), ("left", "QUESTION")]
# "that" deleted, "uh ," inserted, "then" -> "than" substituted
ALIGN_HYP = [("i", "O"), ("think", "COMMA"), ("we", "O"), ("should", "O"), ("uh", "COMMA"),
             ("go", "PERIOD"), ("than", "COMMA"), ("you", "O"), ("left", "PERIOD")]


def test_align_scores_aligned_words(tmp_path: Path) -> None:
    ref = write_twocol(tmp_path / "ref", *map(list, zip(*ALIGN_REF)))
    hyp = write_twocol(tmp_path / "hyp", *map(list, zip(*ALIGN_HYP)))
    with pytest.raises(PunctkitError, match="word 3"):
        score_files(ref, hyp)
    res = score_files(ref, hyp, align=True)
    assert res["alignment"] == {
        "ref_words": 9, "hyp_words": 9, "aligned": 8, "matched": 7, "substituted": 1,
        "ref_unaligned": 1, "hyp_unaligned": 1, "ref_marks_unaligned": 1, "hyp_marks_unaligned": 1,
    }
    # aligned pairs: think C, go C, then/than I, left QUESTION->PERIOD S; unaligned: "that ," a
    # deletion (the hypothesis lacks the word), "uh ," an insertion
    assert (res["C"], res["S"], res["D"], res["I"]) == (2, 1, 1, 2)
    assert res["counts"]["slots"] == 10
    assert "unaligned: 1 ref words" in format_report(res)
    r = CliRunner().invoke(app, ["score", str(ref), str(hyp), "--align"])
    assert r.exit_code == 0 and "8 word pairs (7 matched, 1 substituted)" in r.output


def _edit_distance(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a):
        cur = [i + 1]
        for j, y in enumerate(b):
            cur.append(min(prev[j] + (x != y), prev[j + 1] + 1, cur[j] + 1))
        prev = cur
    return prev[-1]


# (whole, split): the same text, contractions written whole on one side and split on the other, marks the same
CONTRACTIONS = [
    ("they won't. It's late.", "they wo n't. It 's late."),
    ("I don't.", "I do n't."),
    ("We can't, they'll see. You're right, we've seen it?", "We ca n't, they 'll see. You 're right, we 've seen it?"),
    ("I'm sure I'd go, it’s late.", "I 'm sure I 'd go, it 's late."),
    ("SHE'S HERE. Don't go, he'd say we're fine.", "SHE 'S HERE. Do n't go, he 'd say we 're fine."),
]


def score_texts(tmp_path: Path, ref: str, hyp: str) -> dict:
    """`punctkit score REF HYP --align --json` of two one-line text files."""
    (tmp_path / "ref.txt").write_text(ref + "\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text(hyp + "\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["score", str(tmp_path / "ref.txt"), str(tmp_path / "hyp.txt"), "--align", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.parametrize("whole, split", CONTRACTIONS)
@pytest.mark.parametrize("ref_is_split", [False, True])
def test_align_contractions_split_or_whole_are_the_same_words(tmp_path: Path, whole: str, split: str,
                                                               ref_is_split: bool) -> None:
    """A contraction split on one side and whole on the other is one matched word, its mark the mark of its
    last piece: the same marks give F1 100, whichever side splits, however the aligner breaks ties; the
    case is the word's (`It 's` against `It's`)."""
    ref, hyp = (split, whole) if ref_is_split else (whole, split)
    res = score_texts(tmp_path, ref, hyp)
    assert res["overall"]["f1"] == 100.0 and (res["S"], res["D"], res["I"]) == (0, 0, 0), res["confusion"]
    al = res["alignment"]
    pieces = len(split.split()) - len(whole.split())
    assert (al["substituted"], al["ref_unaligned"], al["hyp_unaligned"]) == (0, 0, 0)
    assert al["matched"] == len(whole.split())
    assert (al["ref_joined"], al["hyp_joined"]) == ((pieces, 0) if ref_is_split else (0, pieces))
    assert res["case"]["exact"]["f1"] == 100.0 and res["case"]["classes"]["C"]["f1"] == 100.0
    assert f"{pieces} " in format_report(res) and "joined to the word they end" in format_report(res)


@pytest.mark.parametrize("ref_is_split", [False, True])
def test_align_contractions_a_wrong_mark_still_costs(tmp_path: Path, ref_is_split: bool) -> None:
    """Joined contractions do not hide mark errors: a wrong mark after the word, a mark inside it (after
    its first piece), a missing one, and a contraction that is not the same word (`it's` against `it`)."""
    cases = [  # (whole, split, (C, S, D, I))
        ("they won't. It's late.", "they wo n't? It 's late.", (1, 1, 0, 0)),
        ("they won't. It's late.", "they wo n't It 's late.", (1, 0, 1, 0)),
        ("they won't go. It's late.", "they wo, n't go. It 's late.", (2, 0, 0, 1)),
    ]
    for whole, split, counts in cases:
        ref, hyp = (split, whole) if ref_is_split else (whole, split)
        res = score_texts(tmp_path, ref, hyp)
        c, s_, d, i = counts
        want = (c, s_, i, d) if ref_is_split else counts  # the sides swapped: insertions are deletions
        assert (res["C"], res["S"], res["D"], res["I"]) == want, (ref, hyp)
        assert res["overall"]["f1"] < 100.0
    # the clitic the other side lacks: one substituted word, its mark compared
    res = score_texts(tmp_path, "so it's late, they said.", "so it late, they said.")
    al = res["alignment"]
    assert (al["substituted"], al["ref_unaligned"], al["hyp_unaligned"], res["overall"]["f1"]) == (1, 0, 0, 100.0)
    # a word deleted before a clitic written on its own: the clitic stays matched with its own
    res = score_texts(tmp_path, "and that 's the end.", "and 's the end.")
    al = res["alignment"]
    assert (al["substituted"], al["ref_unaligned"], al["hyp_unaligned"], al["matched"]) == (0, 1, 0, 4)


def test_align_words_is_minimal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hirschberg splits (forced by a tiny full-DP limit) give an optimal, complete alignment."""
    import punctkit.text.edit_align as edit_align

    rnd = random.Random(3)
    for limit in (4, 60, 10**6):
        monkeypatch.setattr(edit_align, "FULL_DP_CELLS", limit)
        for _ in range(60):
            a = [rnd.choice("abcd") for _ in range(rnd.randint(0, 25))]
            b = [rnd.choice("abcd") for _ in range(rnd.randint(0, 25))]
            pairs = align_words(a, b)
            assert [i for i, _ in pairs if i is not None] == list(range(len(a)))
            assert [j for _, j in pairs if j is not None] == list(range(len(b)))
            cost = sum(i is None or j is None or a[i] != b[j] for i, j in pairs)
            assert cost == _edit_distance(a, b)


def test_bootstrap(faber: tuple[Path, Path]) -> None:
    ref = read_transcript(faber[0])
    hyp = read_transcript(faber[1])
    res = bootstrap(ref, ref, hyp, samples=200, seed=5)
    assert res["p_better"] == 1.0 and res["f1"] == 100.0
    assert res["f1_hyp2"] == pytest.approx(score(ref, hyp)["overall"]["f1"])
    assert res["unit"] == "utterance" and res["units"] == 179
    assert bootstrap(ref, hyp, ref, samples=200, seed=5)["p_better"] == 0.0
    again = bootstrap(ref, ref, hyp, samples=200, seed=5)
    assert again == res
    # a close pair: deterministic for a seed, and between 0 and 1
    words, r_labels, h_labels = realise(FABER_MATRIX, FABER_CLASSES)
    h2 = list(h_labels)
    for i in range(0, len(h2), 40):
        h2[i] = r_labels[i]  # a slightly better hypothesis
    hyp2 = Transcript("better", words, h2, [], [])
    a = bootstrap(ref, hyp2, hyp, samples=300, seed=1)
    b = bootstrap(ref, hyp2, hyp, samples=300, seed=1)
    assert a == b and 0.5 < a["p_better"] <= 1.0 and a["f1"] > a["f1_hyp2"]


def test_bootstrap_cli(faber: tuple[Path, Path]) -> None:
    args = ["score", str(faber[0]), str(faber[0]), "--bootstrap", str(faber[1]), "--samples", "100",
            "--seed", "3", "--json"]
    r1_ = CliRunner().invoke(app, args)
    r2_ = CliRunner().invoke(app, args)
    assert r1_.exit_code == 0, r1_.output
    assert r1_.output == r2_.output
    assert json.loads(r1_.output)["bootstrap"]["p_better"] == 1.0


def test_write_score_atomic(hand: tuple[Path, Path], tmp_path: Path) -> None:
    res = score_files(*hand)
    txt, js = write_score(res, tmp_path / "exp" / "score")
    assert json.loads(js.read_text()) == res and txt.read_text() == format_report(res)
    assert sorted(p.name for p in txt.parent.iterdir()) == ["score.json", "score.txt"]


needs_iwslt = pytest.mark.skipif(not (IWSLT / "test2011").is_file(), reason=f"{IWSLT}/test2011 not present")


@needs_iwslt
def test_test2011_against_itself() -> None:
    res = score_files(IWSLT / "test2011", IWSLT / "test2011")
    assert res["overall"]["f1"] == 100.0 and res["SER"] == 0.0 and res["CER"] == 0.0
    # 12626 lines, one word each (repairs never split or drop a test2011 token)
    assert res["counts"]["slots"] == res["counts"]["ref_words"] == 12626
    assert res["overall"]["support"] == 830 + 807 + 46
    assert all(res["per_class"][c]["f1"] == 100.0 for c in ("COMMA", "PERIOD", "QUESTION"))


@needs_iwslt
def test_test2011_align_against_edited_copy(tmp_path: Path) -> None:
    """A test2011-sized alignment (12.6k words both sides) with known word edits."""
    ref = read_transcript(IWSLT / "test2011")
    words, labels = list(ref.words), list(ref.labels)
    for k, i in enumerate(range(12000, 100, -400)):  # descending, so earlier indices stay put
        if k % 2:
            del words[i], labels[i]
        else:
            words.insert(i, "zzinserted")
            labels.insert(i, "O")
    hyp = write_twocol(tmp_path / "hyp", words, labels, utt_len=None)
    res = score_files(IWSLT / "test2011", hyp, align=True)
    n = len(range(12000, 100, -400))
    assert res["alignment"]["hyp_unaligned"] == (n + 1) // 2
    assert res["alignment"]["ref_unaligned"] == n // 2
    assert res["alignment"]["substituted"] == 0
    deleted_marks = res["alignment"]["ref_marks_unaligned"]
    assert res["D"] == deleted_marks > 0 and res["I"] == 0 and res["S"] == 0
    assert res["C"] == 830 + 807 + 46 - deleted_marks
    bs = bootstrap(ref, ref, read_transcript(hyp), samples=20, seed=1, align=True)
    assert bs["unit"] == "block of 100 words" and bs["units"] == 127


def test_align_data_dirs_utterance_by_utterance(tmp_path: Path) -> None:
    """Two data dirs with the same utterance ids (ASR output) align per utterance; errors name the utterance."""
    from punctkit.data.formats import Utterance, write
    from punctkit.data.labels import get_inventory

    ref_utts = [Utterance("utt1", ["hello", "there", "friend"], ["O", "O", "PERIOD"]),
                Utterance("utt2", ["how", "are", "you"], ["O", "O", "QUESTION"])]
    hyp_utts = [Utterance("utt1", ["hello", "friend"], ["COMMA", "PERIOD"]),
                Utterance("utt2", ["how", "are", "you", "doing"], ["O", "O", "O", "QUESTION"])]
    inv = get_inventory("4class")
    write(ref_utts, tmp_path / "ref", "datadir", inv)
    write(hyp_utts, tmp_path / "hyp", "datadir", inv)
    with pytest.raises(PunctkitError, match=r"word 2 \(ref utterance utt1 word 2: 'there'; hyp utterance utt1 word 2"):
        score_files(tmp_path / "ref", tmp_path / "hyp")
    res = score_files(tmp_path / "ref", tmp_path / "hyp", align=True)
    al = res["alignment"]
    assert (al["aligned"], al["ref_unaligned"], al["hyp_unaligned"], al["hyp_marks_unaligned"]) == (5, 1, 1, 1)
    # friend C, you D, hello I; the inserted "doing ?" is an insertion too
    assert (res["C"], res["S"], res["D"], res["I"]) == (1, 0, 1, 2)
    # a word moved across an utterance boundary is unaligned in both (a whole-stream alignment would match it)
    moved = [Utterance("utt1", ["hello", "there"], ["O", "O"]),
             Utterance("utt2", ["friend", "how", "are", "you"], ["PERIOD", "O", "O", "QUESTION"])]
    write(moved, tmp_path / "moved", "datadir", inv)
    al = score_files(tmp_path / "ref", tmp_path / "moved", align=True)["alignment"]
    assert (al["ref_unaligned"], al["hyp_unaligned"], al["aligned"]) == (1, 1, 5)


# ---------------------------------------------------------------- undefined figures, unaligned words

BAD = Path(__file__).resolve().parent / "bad_inputs" / "errors"


def test_ser_without_reference_marks_is_undefined(tmp_path: Path) -> None:
    """A reference with no marks has no SER (0 would read as perfect): None, null in JSON, n/a in reports."""
    from punctkit.report import collect, markdown

    ref = BAD / "ref_no_marks.txt"
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("so what do you think?\nI said no.\nwell that is fine with me\n")
    res = score_files(ref, hyp)
    assert (res["C"], res["S"], res["D"], res["I"]) == (0, 0, 0, 2)
    assert res["SER"] is None and res["CER"] == pytest.approx(100 * 2 / 14)
    assert "SER n/a  CER 14.3" in format_report(res)
    out = tmp_path / "exp" / "decode_test"
    write_score(res, out)
    assert json.loads((out / "score.json").read_text())["SER"] is None
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "score", str(ref), str(hyp), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and '"SER": null' in r.stdout
    row = markdown(collect([tmp_path / "exp"])).splitlines()[2]
    assert [c.strip() for c in row.strip("|").split("|")][-4] == "n/a"
    # the pack card quotes score.json as it is: undefined stays null, not 0
    from punctkit.package import make_card

    conf = {"model": {"type": "ff2"}, "frontend": {}, "resolved": {"inventory": "4class"}, "decode": {}}
    card = make_card(tmp_path / "exp", conf, Path("model.best.pt"), [out / "score.json"], "ted")
    assert card["results"]["decode_test"]["SER"] is None and card["results"]["decode_test"]["f1"] == 0.0


def _half_missing(tmp_path: Path) -> tuple[Path, Path, int]:
    """A 400-word reference with a mark every 4th word, and a hypothesis that has only its first half."""
    rng = random.Random(5)
    words = [rng.choice(WORDS) for _ in range(400)]
    labels = ["PERIOD" if i % 8 == 7 else "COMMA" if i % 4 == 3 else "O" for i in range(400)]
    ref = write_twocol(tmp_path / "ref", words, labels, utt_len=None)
    hyp = write_twocol(tmp_path / "hyp", words[:200], labels[:200], utt_len=None)
    return ref, hyp, sum(lab != "O" for lab in labels[200:])


def test_align_counts_marks_on_missing_words(tmp_path: Path) -> None:
    """Half the hypothesis missing: the missing half's marks are deletions, so recall is ~50, not 100."""
    ref, hyp, missing_marks = _half_missing(tmp_path)
    res = score_files(ref, hyp, align=True)
    assert res["alignment"]["ref_unaligned"] == 200 and res["alignment"]["ref_marks_unaligned"] == missing_marks
    assert res["D"] == missing_marks == 50 and res["I"] == 0 and res["C"] == 50
    assert res["overall"]["precision"] == 100.0 and res["overall"]["recall"] == 50.0
    assert res["overall"]["f1"] == pytest.approx(200 / 3) and res["SER"] == 50.0
    assert "200 ref words (50 marks)" in format_report(res)
    # inserted words with marks are insertions: swap the sides
    rev = score_files(hyp, ref, align=True)
    assert (rev["I"], rev["D"]) == (50, 0) and rev["overall"]["precision"] == 50.0


def test_bootstrap_counts_unaligned_words_as_score_does(tmp_path: Path) -> None:
    ref, hyp, _ = _half_missing(tmp_path)
    res = score_files(ref, hyp, align=True, hyp2_path=ref, samples=50, block_len=20)
    bs = res["bootstrap"]
    assert bs["f1"] == pytest.approx(res["overall"]["f1"]) and bs["f1"] < 70
    assert bs["f1_hyp2"] == 100.0 and bs["p_better"] == 0.0


# ---------------------------------------------------------------- case: exact forms, classes, inside sentences

def _case_of(tmp_path: Path, ref: str, hyp: str, suffix: str = ".txt", **kw) -> dict:
    """Score two texts written to files (`suffix` picks the format) and return their case figures."""
    (tmp_path / f"ref{suffix}").write_text(ref, encoding="utf-8")
    (tmp_path / f"hyp{suffix}").write_text(hyp, encoding="utf-8")
    return score_files(tmp_path / f"ref{suffix}", tmp_path / f"hyp{suffix}", **kw)["case"]


def _exact(m: dict) -> tuple:
    return m["hits"], m["hyp_words"], m["ref_words"], r1(m["precision"]), r1(m["recall"]), r1(m["f1"])


def test_exact_form_case_of_cased_text(tmp_path: Path) -> None:
    """Plain cased text on both sides: exact forms are the words; classes L/C/U/M by their letters."""
    ref, hyp = "The NASA team met in New York.\n", "the NASA Team met in new York.\n"
    case = _case_of(tmp_path, ref, hyp)
    # ref not all lower case: The NASA New York (4); hyp: NASA Team York (3); identical: NASA York (2)
    # P 2/3, R 2/4, F1 2*2/(3+4) = 57.1; inside sentences ("The" starts one): ref 3, hyp 3, hits 2
    assert _exact(case["exact"]) == (2, 3, 4, 66.7, 50.0, 57.1)
    assert _exact(case["exact_inside"]) == (2, 3, 3, 66.7, 66.7, 66.7)
    # classes ref C U L L L C C, hyp L U C L L L C
    assert case["scheme"] == "true" and case["confusion"]["labels"] == ["L", "C", "U", "M"]
    assert case["confusion"]["matrix"] == [[2, 1, 0, 0], [2, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    c = case["classes"]
    assert (c["C"]["correct"], c["C"]["predicted"], c["C"]["support"]) == (1, 2, 3)
    assert (c["L"]["precision"], c["U"]["f1"], c["M"]["support"]) == (50.0, 100.0, 0)
    assert (case["slots"], case["skipped"]) == (7, 0) and "U" not in case  # Faber's U key is for case4 only
    # the report and the JSON of the command
    out = tmp_path / "exp"
    r = CliRunner().invoke(app, ["score", str(tmp_path / "ref.txt"), str(tmp_path / "hyp.txt"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert "case (classes of the exact forms: L lower, C Capitalized, U UPPER, M Mixed):" in lines
    assert [x.split()[-5:] for x in lines if x.startswith("exact")][:2] == [
        ["66.7", "50.0", "57.1", "4", "3"], ["66.7", "66.7", "66.7", "3", "3"]]
    assert json.loads((out / "score.json").read_text())["case"] == case
    # the reference says nothing of case (all lower case, no case labels): no case figures
    assert _case_of(tmp_path, ref.lower(), hyp) is None


def test_exact_form_inside_sentences_kaldi_text(tmp_path: Path) -> None:
    """Kaldi text, two utterances of one stream: a sentence starts at the first word and after
    . ? ! ...; an utterance that follows a word without such a mark ("and") starts none."""
    ref = "u1 Yesterday the NASA team met in New York. Then Anna called iPhone support\nu2 and she said OK.\n"
    hyp = "u1 yesterday the Nasa team met in New York. then anna called iPhone Support\nu2 And she said OK.\n"
    case = _case_of(tmp_path, ref, hyp, suffix="")
    assert case["slots"] == 17  # the ids are no words: read as Kaldi text
    # ref not all lower case: Yesterday NASA New York Then Anna iPhone OK (8); hyp: Nasa New York
    # iPhone Support And OK (7); identical: New York iPhone OK (4): P 4/7, R 4/8, F1 8/15
    assert _exact(case["exact"]) == (4, 7, 8, 57.1, 50.0, 53.3)
    # inside sentences (not Yesterday, not Then): ref 6, hyp 7 (And counts), hits 4: F1 8/13
    assert _exact(case["exact_inside"]) == (4, 7, 6, 57.1, 66.7, 61.5)
    # rows ref L C U M, columns hyp: NASA->Nasa is U->C, support/And L->C, Yesterday/Then/Anna C->L
    assert case["confusion"]["matrix"] == [[7, 2, 0, 0], [3, 2, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]]
    assert (case["classes"]["U"]["precision"], case["classes"]["U"]["recall"]) == (100.0, 50.0)


def test_lower_case_hypothesis_against_cased_twocol(tmp_path: Path) -> None:
    """A true-case twocol reference against plain lower-case text: case is measured (recall 0)."""
    ref = write_twocol(tmp_path / "ref", ["The", "NASA", "team", "left"], ["C_O", "U_O", "L_O", "L_PERIOD"])
    (tmp_path / "hyp.txt").write_text("the nasa team left.\n")
    case = score_files(ref, tmp_path / "hyp.txt")["case"]
    assert case["scheme"] == "true" and _exact(case["exact"]) == (0, 0, 2, 0.0, 0.0, 0.0)
    assert case["classes"]["C"]["recall"] == 0.0 and case["classes"]["L"]["correct"] == 2
    # the other way round, the reference says nothing of case
    assert score_files(tmp_path / "hyp.txt", ref)["case"] is None


def _case_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A truecase4 reference data dir (with a case_unknown file) and a case4 hypothesis data dir."""
    from punctkit.data.formats import Utterance, write
    from punctkit.data.labels import get_inventory

    ref = [Utterance("u1", ["The", "BBC", "said", "so"], ["C_O", "U_O", "L_O", "L_PERIOD"]),
           Utterance("u2", ["McDonald", "agreed"], ["M_O", "L_PERIOD"])]
    hyp = [Utterance("u1", ["the", "bbc", "said", "so"], ["U_O", "U_O", "L_O", "L_PERIOD"]),
           Utterance("u2", ["mcdonald", "agreed"], ["U_O", "L_PERIOD"])]
    write(ref, tmp_path / "ref", "datadir", get_inventory("truecase4"))
    write(hyp, tmp_path / "hyp", "datadir", get_inventory("case4"))
    (tmp_path / "ref" / "case_unknown").write_text("u2 0\n")
    return tmp_path / "ref", tmp_path / "hyp"


def test_case_unknown_words_are_skipped(tmp_path: Path) -> None:
    """case4 hypothesis words take their label's class (bbc U -> Bbc); McDonald has no case reference."""
    ref, hyp = _case_dirs(tmp_path)
    case = score_files(ref, hyp)["case"]
    # compared: The/The BBC/Bbc said so agreed; not lower case: ref The BBC, hyp The Bbc; identical: The
    assert (case["slots"], case["skipped"]) == (5, 1)
    assert _exact(case["exact"]) == (1, 2, 2, 50.0, 50.0, 50.0)
    assert _exact(case["exact_inside"]) == (0, 1, 1, 0.0, 0.0, 0.0)  # BBC/Bbc; The starts the sentence
    assert case["confusion"]["matrix"] == [[3, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]
    assert "1 reference words skipped (no case reference: case_unknown)" in format_report(score_files(ref, hyp))
    # without the file McDonald/Mcdonald is compared (both not lower case, not identical)
    (ref / "case_unknown").unlink()
    case = score_files(ref, hyp)["case"]
    assert (case["slots"], case["skipped"]) == (6, 0) and _exact(case["exact"])[:3] == (1, 3, 3)


@pytest.mark.parametrize("line, msg", [
    ("u3 0", r"case_unknown:1: utterance 'u3' is not in .*ref"),
    ("u2 2", r"case_unknown:1 \(utterance u2\): '2' is not a word index .* below its 2 words"),
    ("u1 x", r"case_unknown:1 \(utterance u1\): 'x' is not a word index"),
])
def test_case_unknown_errors_name_the_line(tmp_path: Path, line: str, msg: str) -> None:
    ref, hyp = _case_dirs(tmp_path)
    (ref / "case_unknown").write_text(line + "\n")
    with pytest.raises(PunctkitError, match=msg):
        score_files(ref, hyp)


def test_exact_form_case_with_align(tmp_path: Path) -> None:
    """--align: only aligned pairs are compared; the deleted "Bob" and the inserted "Today" are not."""
    case = _case_of(tmp_path, "Anna met Bob and the NASA team in New York.\n",
                    "Anna met and the NASA Team in new York Today.\n", align=True)
    # aligned, not lower case: ref Anna NASA New York (4), hyp Anna NASA Team York (4); identical 3
    assert case["slots"] == 9 and _exact(case["exact"]) == (3, 4, 4, 75.0, 75.0, 75.0)
    assert _exact(case["exact_inside"]) == (2, 3, 3, 66.7, 66.7, 66.7)  # Anna starts the sentence


def test_a_lower_case_true_case_reference_says_nothing_of_case(iwslt: Path, tmp_path: Path) -> None:
    """test2011 as IWSLT has it (lower case) prepared in truecase4 has only L labels: no case figures,
    even against a cased hypothesis; the same words cased give them."""
    from punctkit.data.prepare import prepare
    from punctkit.score import score_files

    prepare([iwslt / "test2011"], tmp_path / "ref", inventory="truecase4", block_len=100, lines=(1, 300))
    words = (tmp_path / "ref" / "text").read_text().split("\n")[0].split()[1:]
    hyp = tmp_path / "hyp.txt"
    hyp.write_text(" ".join(w.capitalize() for w in words) + "\n")
    assert score_files(tmp_path / "ref", hyp, align=True)["case"] is None
    cased = tmp_path / "cased.txt"
    cased.write_text(" ".join(w.capitalize() if i % 7 == 0 else w for i, w in enumerate(words)) + "\n")
    assert score_files(cased, hyp, align=True)["case"]["exact"]["f1"] > 0
