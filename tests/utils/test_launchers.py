"""The Kaldi-style launchers in utils/: the local backend run for real, and the
option -> scheduler flag mapping of the slurm and sge backends."""
from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "utils" / "run.sh"
CONF = ROOT / "recipes" / "iwslt" / "conf"


def launch(tmp_path: Path, *args: str, script: Path = RUN) -> subprocess.CompletedProcess:
    return subprocess.run([str(script), *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)


def times(log: Path) -> tuple[float, float]:
    """(start, end) epochs from a job log's header and footer."""
    text = log.read_text()
    start = float(re.search(r"^# started: .*\(epoch ([\d.]+)\)$", text, re.M).group(1))
    end = float(re.search(r"^# ended: .*\(epoch ([\d.]+)\),", text, re.M).group(1))
    return start, end


def load_launcher():
    spec = importlib.util.spec_from_file_location("launch", ROOT / "utils" / "launch.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["launch"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_job_substitution_quoting_and_pipes(tmp_path):
    r = launch(tmp_path, "JOB=1:3", "exp/log/echo.JOB.log",
               "printf", "%s|%s\\n", "a  b", "it's job JOB", "|", "tr", "a-z", "A-Z", ">", "out.JOB.txt")
    assert r.returncode == 0, r.stderr
    for j in (1, 2, 3):
        assert (tmp_path / f"out.{j}.txt").read_text() == f"A  B|IT'S JOB {j}\n"
        log = (tmp_path / f"exp/log/echo.{j}.log").read_text().splitlines()
        assert log[0] == f"# punctkit launcher (local): job {j} of JOB=1:3"
        assert log[1].startswith("# command: printf") and f"out.{j}.txt" in log[1]
        assert log[2].startswith("# host: ") and log[3].startswith("# started: ")
        assert log[-2].startswith("# ended: ") and log[-1] == "# exit status: 0"
    # JOB inside a longer word is left alone; a single job needs no range
    r = launch(tmp_path, "exp/log/one.log", "echo", "JOBS", "x_JOB_y")
    assert r.returncode == 0, r.stderr
    assert "\nJOBS x_JOB_y\n" in (tmp_path / "exp/log/one.log").read_text()


def test_failed_job_fails_launcher_and_names_its_log(tmp_path):
    r = launch(tmp_path, "JOB=1:3", "log/t.JOB.log", "echo", "running", "JOB", ";", "test", "JOB", "-ne", "2")
    assert r.returncode == 1
    assert "see log/t.2.log" in r.stderr and "t.1.log" not in r.stderr and "t.3.log" not in r.stderr
    assert "1 of 3 job(s) failed" in r.stderr
    log2 = (tmp_path / "log/t.2.log").read_text()
    assert "running 2\n" in log2 and log2.endswith("# exit status: 1\n")
    assert (tmp_path / "log/t.3.log").read_text().endswith("# exit status: 0\n")


# A Ctrl-C that comes while a job's process is being created (sent from the child before its exec):
# the launcher sends it again; one that came before: the job does not start.
CTRL_C_RACE = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import launch
with launch.Interrupts() as stop:
    during = stop.call(["sleep", "100"], preexec_fn=lambda: os.kill(os.getppid(), signal.SIGINT))
    after = stop.call(["touch", "ran"])
print(during, after)
"""


def test_ctrl_c_ends_the_launcher_in_one_line(tmp_path):
    """Ctrl-C reaches the launcher and its jobs (one process group): exit 130, one line, no traceback;
    a job waiting for a slot (--max-jobs-run 2) does not start after it. A job whose process was
    being created as it came gets it from the launcher (once it was lost: the launcher waited for
    that job to end on its own; on a loaded machine, about 1 run in 40 of this test)."""
    p = subprocess.Popen([str(RUN), "--max-jobs-run", "2", "JOB=1:3", "log/w.JOB.log", "sleep", "100"],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    logs = [tmp_path / f"log/w.{j}.log" for j in (1, 2, 3)]
    try:
        deadline = time.monotonic() + 120  # a bound for a loaded machine, not a timing: the event is waited on
        while not all(log.is_file() and "# started:" in log.read_text() for log in logs[:2]):
            assert p.poll() is None and time.monotonic() < deadline, "jobs 1 and 2 did not start"
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1].endswith("interrupted") and "Traceback" not in err
    assert load_launcher().job_status(logs[2]) in (130, -signal.SIGINT), logs[2].read_text()
    r = subprocess.run([sys.executable, "-c", CTRL_C_RACE, str(ROOT / "utils")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == [str(-signal.SIGINT), "None"], r.stderr
    assert not (tmp_path / "ran").exists()


def test_max_jobs_run_serialises(tmp_path):
    r = launch(tmp_path, "--max-jobs-run", "1", "JOB=1:3", "log/s.JOB.log", "sleep", "0.3")
    assert r.returncode == 0, r.stderr
    spans = sorted(times(tmp_path / f"log/s.{j}.log") for j in (1, 2, 3))
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, "two jobs ran at once"
    # without the limit the same jobs overlap (so the check above can fail)
    r = launch(tmp_path, "JOB=1:3", "log/p.JOB.log", "sleep", "0.5")
    assert r.returncode == 0, r.stderr
    spans = sorted(times(tmp_path / f"log/p.{j}.log") for j in (1, 2, 3))
    assert spans[1][0] < spans[0][1]


def test_usage_errors(tmp_path):
    r = launch(tmp_path, "JOB=1:2", "log/same.log", "true")
    assert r.returncode == 2 and "must contain JOB" in r.stderr
    r = launch(tmp_path, "--mem")
    assert r.returncode == 2 and "--mem needs a value" in r.stderr
    r = launch(tmp_path, "--max-jobs-run", "0", "JOB=1:2", "log/x.JOB.log", "true")
    assert r.returncode == 2 and "--max-jobs-run expects a positive number" in r.stderr


def test_slurm_flags_from_config(tmp_path, monkeypatch):
    mod = load_launcher()
    monkeypatch.chdir(tmp_path)
    req = mod.parse_args(["--config", str(CONF / "slurm.conf"), "--mem", "4G", "--gpu", "2",
                          "--num-threads", "3", "--max-jobs-run", "2", "JOB=1:4", "exp/log/dec.JOB.log",
                          "echo", "JOB"])
    cmd = mod.submit_command("slurm", req)
    assert cmd[:2] == ["sbatch", "--export=ALL"]
    for flag in ("--mem-per-cpu=4G", "--gres=gpu:2", "--cpus-per-task=3", "--array=1-4%2", "--parsable"):
        assert flag in cmd
    script = Path(cmd[-1])
    assert script == Path("exp/log/q/dec.sh") and "SLURM_ARRAY_TASK_ID" in script.read_text()
    # an exact value wins over '*'; the default fills an option not given
    req = mod.parse_args(["--config", str(CONF / "slurm.conf"), "--gpu", "0", "log/x.log", "true"])
    cmd = mod.submit_command("slurm", req)
    assert not any(c.startswith("--gres") for c in cmd) and "--cpus-per-task=1" in cmd
    req = mod.parse_args(["--config", str(CONF / "slurm.conf"), "--colour", "red", "log/x.log", "true"])
    with pytest.raises(mod.LaunchError, match=r"slurm.conf: no 'map colour=...' line"):
        mod.submit_command("slurm", req)


def test_sge_flags_from_config(tmp_path, monkeypatch):
    mod = load_launcher()
    monkeypatch.chdir(tmp_path)
    req = mod.parse_args(["--config", str(CONF / "queue.conf"), "--mem", "2G", "--num-threads", "4",
                          "--max-jobs-run", "3", "JOB=2:5", "log/f.JOB.log", "true"])
    cmd = mod.submit_command("sge", req)
    assert cmd[:2] == ["qsub", "-V"]
    line = " ".join(cmd)
    for part in ("-l mem_free=2G,ram_free=2G", "-pe smp 4", "-sync y", "-t 2-5", "-tc 3"):
        assert part in line
    assert "SGE_TASK_ID" in Path(cmd[-1]).read_text()


def test_bad_config_line_is_named(tmp_path, monkeypatch):
    mod = load_launcher()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.conf").write_text("submit sbatch\nmap mem\n")
    req = mod.parse_args(["--config", "bad.conf", "--mem", "1G", "log/x.log", "true"])
    with pytest.raises(mod.LaunchError, match=r"bad.conf:2: expected"):
        mod.submit_command("slurm", req)


@pytest.mark.parametrize("rng, why", [("JOB=3:1", "empty job range 'JOB=3:1'"),
                                      ("JOB=a:b", "bad job range 'JOB=a:b'"),
                                      ("JOB=0:2", "jobs are numbered from 1"),
                                      ("JOB=", "bad job range 'JOB='")])
def test_bad_job_range_is_one_line(tmp_path, rng, why):
    r = launch(tmp_path, rng, "log/x.JOB.log", "touch", "ran.JOB")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("run.sh: error: ")
    assert why in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir())  # no job ran, no log, no file named after the range


@pytest.mark.parametrize("log", ["afile/x.JOB.log", "/proc/punctkit-no-such/x.JOB.log"])
def test_log_that_cannot_be_created_is_one_line(tmp_path, log):
    (tmp_path / "afile").write_text("a regular file\n")
    r = launch(tmp_path, "JOB=1:2", log, "touch", "ran.JOB")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"run.sh: error: cannot create the log {log.replace('JOB', '1')}")
    assert not (tmp_path / "ran.1").exists()  # checked before any job starts


def test_launcher_keeps_shell_meaning_only_of_operators_and_redirections():
    """What the README says: these keep their shell meaning, everything else is one literal word."""
    shell_join = load_launcher().shell_join
    kept = ["|", "|&", "||", "&&", ";", "&", "<", ">", ">>", "2>&1", ">out.txt", "2>>err.log", "&>all.log", "<in"]
    assert shell_join(kept) == " ".join(kept)
    for literal in ["a b", "$HOME", "*", "~/x", "(", ")", ">$out", "> out", "`id`", "<<", "x|y", "JOB;"]:
        assert shell_join([literal]) != literal


@pytest.mark.parametrize("script", ["run.sh", "slurm.sh", "queue.sh"])
@pytest.mark.parametrize("rng, why", [
    ("JOB=1:99999999999999999999", "'JOB=1:99999999999999999999': job numbers go up to 1000000"),
    ("JOB=1:" + "9" * 5000, "job numbers go up to 1000000"),  # more digits than Python converts to an int
    ("JOB=99999999999999999999", "job numbers go up to 1000000"),
    ("JOB=1:10001", "'JOB=1:10001' has 10001 jobs: at most 10000 run in one launch"),
    ("JOB=\u0661:\u0663", "bad job range"),  # Arabic-Indic digits: int() reads them, a job range does not
    ("JOB=1\n:2", "bad job range 'JOB=1\\n:2'"),
])
def test_job_ranges_too_large_or_odd_are_one_line_on_every_backend(tmp_path, script, rng, why):
    """Refused before any job, log or scheduler file: exit 2, one line, the range shown (at most 60 characters)."""
    r = launch(tmp_path, rng, "log/x.JOB.log", "touch", "ran.JOB", script=ROOT / "utils" / script)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"{script}: error: ") and why in r.stderr and len(r.stderr) < 250
    assert not list(tmp_path.iterdir())


def test_the_largest_ranges_still_run():
    """The limits bite just above: 10000 jobs, job number 1000000 (parsed only, nothing runs)."""
    parse_range = load_launcher().parse_range
    assert parse_range("JOB=1:10000") == ("JOB", 1, 10000)
    assert parse_range("JOB=990001:1000000") == ("JOB", 990001, 1000000)
    assert parse_range("JOB=0003:05") == ("JOB", 3, 5)


@pytest.mark.parametrize("width", ["\u00b2", "1" + "0" * 6, "9" * 5000, "-1"])
def test_odd_max_jobs_run_is_one_line(tmp_path, width):
    """A superscript two is a digit to str.isdigit but not to int(); too many digits are not converted."""
    r = launch(tmp_path, "--max-jobs-run", width, "JOB=1:2", "log/x.JOB.log", "touch", "ran.JOB")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "--max-jobs-run expects a positive number up to 999999" in r.stderr and len(r.stderr) < 250
    assert not list(tmp_path.iterdir())
