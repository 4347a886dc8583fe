"""utils/slurm.sh against a real one-node SLURM started by utils/slurm/setup_slurm.sh.

Needs root (or password-less sudo) and apt: the setup script installs slurm-wlm
and munge when missing. Where SLURM cannot start, the tests fail with the reason
when the environment variable CI is set, and are skipped with the reason otherwise.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "utils" / "slurm.sh"
CONF = ROOT / "recipes" / "iwslt" / "conf" / "slurm.conf"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def slurm():
    """Start SLURM for the session (stopping it afterwards if this fixture started it)."""
    setup = ROOT / "utils" / "slurm" / "setup_slurm.sh"
    try:
        r = subprocess.run([str(setup)], capture_output=True, text=True, timeout=900)
        ok, why = r.returncode == 0, (r.stderr.strip() or r.stdout.strip())
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why, r = False, str(e), None
    if not ok:
        reason = f"SLURM could not start: {why}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    started = r is not None and r.stdout.strip().splitlines()[-1:] == ["started"]
    yield
    if started:
        subprocess.run([str(ROOT / "utils" / "slurm" / "stop_slurm.sh")], capture_output=True, timeout=120)


def submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SLURM), "--config", str(CONF), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def times(log: Path) -> tuple[float, float]:
    text = log.read_text()
    start = float(re.search(r"^# started: .*\(epoch ([\d.]+)\)$", text, re.M).group(1))
    end = float(re.search(r"^# ended: .*\(epoch ([\d.]+)\),", text, re.M).group(1))
    return start, end


def test_job_array_writes_logs_and_outputs(slurm, tmp_path):
    r = submit(tmp_path, "--mem", "100M", "--time", "5", "--gpu", "0", "JOB=1:2", "exp/log/hello.JOB.log",
               "echo", "job JOB on", "|", "cat", "-", ">", "out.JOB.txt", ";", "echo", "done", "JOB")
    assert r.returncode == 0, r.stderr
    for j in (1, 2):
        assert (tmp_path / f"out.{j}.txt").read_text() == f"job {j} on\n"
        log = (tmp_path / f"exp/log/hello.{j}.log").read_text()
        assert log.startswith(f"# punctkit launcher (slurm): job {j} of JOB=1:2 (scheduler job ")
        assert f"# command: echo 'job {j} on' | cat - > out.{j}.txt ; echo done {j}\n" in log
        assert re.search(r"^# host: \S+$", log, re.M)
        assert f"\ndone {j}\n" in log and log.endswith("# exit status: 0\n")
    assert (tmp_path / "exp/log/q/hello.sh").is_file()


def test_failing_job_is_reported(slurm, tmp_path):
    r = submit(tmp_path, "JOB=1:2", "log/f.JOB.log", "test", "JOB", "-eq", "1")
    assert r.returncode == 1
    assert "job 2 failed (exit status 1); see log/f.2.log" in r.stderr
    assert "f.1.log" not in r.stderr
    assert (tmp_path / "log/f.2.log").read_text().endswith("# exit status: 1\n")


def test_max_jobs_run_one_at_a_time(slurm, tmp_path):
    r = submit(tmp_path, "--max-jobs-run", "1", "JOB=1:3", "log/s.JOB.log", "sleep", "1")
    assert r.returncode == 0, r.stderr
    spans = sorted(times(tmp_path / f"log/s.{j}.log") for j in (1, 2, 3))
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, "two array tasks ran at once"


def test_recipe_decode_nj2_on_slurm_equals_nj1_local(slurm, tmp_path):
    """Stage 5 of the recipe: `cmd_backend=slurm --nj 2` (a 2-task job array) gives the
    hypothesis directory of `--nj 1` run locally, byte for byte."""
    from parallel_util import decode_stage, dir_bytes, multi_doc_dir, need_iwslt, tiny_model

    need_iwslt()
    exp = tiny_model(tmp_path)
    multi_doc_dir(tmp_path)
    hyp = exp / "decode_test" / "hyp"
    r1 = decode_stage(tmp_path, 1, "local")
    assert r1.returncode == 0, r1.stdout + r1.stderr
    one = dir_bytes(hyp)
    shutil.rmtree(hyp)
    r2 = decode_stage(tmp_path, 2, "slurm")
    assert r2.returncode == 0, r2.stdout + r2.stderr
    for j in (1, 2):
        log = (exp / "decode_test" / "log" / f"decode.{j}.log").read_text()
        assert log.startswith(f"# punctkit launcher (slurm): job {j} of JOB=1:2 (scheduler job ")
        assert log.endswith("# exit status: 0\n")
    assert sorted(one) == ["decode_options.yaml", "inventory", "labels", "spk2utt", "text", "utt2spk"]
    assert dir_bytes(hyp) == one
