"""Kaldi job splitting (punctkit.data.jobs), the one copy extract-feats, align and recognize use."""
from __future__ import annotations

from pathlib import Path

import pytest

from punctkit.data.jobs import (
    check_jobs,
    check_part_record,
    finished_parts,
    job_error,
    jobs_to_run,
    part_files,
    part_key,
    part_path,
    split_parts,
)
from punctkit.files import PunctkitError


@pytest.mark.parametrize("nj, job, option, message", [
    (0, None, "--nj", "--nj must be at least 1, got 0"),
    (2, 3, "--job", "--job 3 is outside 1..2"),
    (2, 0, "--job", "--job 0 is outside 1..2"),
])
def test_bad_nj_and_job_are_one_line_errors(nj, job, option, message):
    assert job_error(nj, job) == (option, message)
    with pytest.raises(PunctkitError, match=f"^{message}$"):
        check_jobs(nj, job)
    with pytest.raises(PunctkitError, match=f"^{message}$"):
        jobs_to_run(nj, job)


def test_parts_follow_kaldi_split_scp():
    assert jobs_to_run(3, None) == [1, 2, 3] and jobs_to_run(3, 2) == [2] and job_error(3, 3) is None
    assert split_parts(list("abcdefg"), 3) == [list("abc"), list("de"), list("fg")]
    assert split_parts(list("ab"), 3) == [["a"], ["b"], []]
    assert part_key(["a", "b", "c"]) == "a..c (3)" and part_key([]) == "(0)"
    with pytest.raises(PunctkitError, match="--nj must be at least 1"):
        split_parts(["a"], 0)


def test_part_names(tmp_path: Path):
    assert part_path(tmp_path / "raw_fbank", 2, ".ark") == tmp_path / "raw_fbank.2.ark"
    assert part_path("log/align_ctm", 10) == Path("log/align_ctm.10")
    assert part_files(tmp_path / "job", "", ".log")(3) == (tmp_path / "job.3", tmp_path / "job.3.log")


def test_merge_refuses_a_missing_part_when_it_reaches_it(tmp_path: Path):
    files = part_files(tmp_path / "p", ".json", ".txt")
    for j in (1, 2):
        for p in files(j):
            p.write_text("x\n")
    (tmp_path / "p.2.txt").unlink()
    got = finished_parts(2, files)
    assert next(got) == files(1)  # part 1 is read before part 2 is looked at
    with pytest.raises(PunctkitError, match=r"^\S*p\.2\.txt: missing \(did job 2 of 2 finish\?\)$"):
        next(got)


def test_a_part_of_another_split_is_refused(tmp_path: Path):
    rec = tmp_path / "p.1.json"
    check_part_record(rec, 1, 2, 2, "a..b (2)", ["a", "b"], "DATA")
    with pytest.raises(PunctkitError, match=r"p\.1\.json: written by a run with --nj 3, not 2$"):
        check_part_record(rec, 1, 2, 3, "a..b (2)", ["a", "b"], "DATA")
    with pytest.raises(PunctkitError, match=r"job 1 ran over utterances a..b \(2\), but part 1 of DATA is now "
                                            r"a..c \(3\); run job 1 again$"):
        check_part_record(rec, 1, 2, 2, "a..b (2)", ["a", "b", "c"], "DATA")
