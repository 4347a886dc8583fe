#!/usr/bin/env python3
r"""Kaldi-style job launcher shared by utils/run.sh, utils/slurm.sh and utils/queue.sh.

Usage (what a recipe writes as `$cmd ...`):

    launch.py BACKEND [--OPTION VALUE]... [VAR=FIRST:LAST] LOG COMMAND [ARG]...

BACKEND is local, slurm or sge. With `JOB=1:4` the command runs four times,
with every `JOB` in LOG and COMMAND replaced by the job's number (a `JOB` that
is part of a longer word of letters and digits, such as `JOBS`, is left
alone). Without a range it runs once.

Options: --mem 4G, --gpu 1, --num-threads 4, --time 2:00:00, --max-jobs-run N
(at most N jobs at once), --config FILE (the option -> scheduler flag mapping;
default conf/slurm.conf or conf/queue.conf in the current directory). Any other
--name value is looked up in the config file. The local backend honours only
--max-jobs-run and ignores the rest.

The command is run by bash. An argument that is exactly a shell operator (`|`,
`|&`, `||`, `&&`, `;`, `&`) or a redirection (`<`, `>`, `>>`, optionally after a
file descriptor number or `&` and before `&` and a target of letters, digits and
`_@%+=:,./-`: `2>&1`, `>out.txt`, `2>>err.log`, `&>all.log`) keeps its shell
meaning (`shell_join`), so `$cmd log a \| b \> out` runs a pipeline; every other
argument reaches the command as one word, unchanged (spaces, quotes, `$`, `*`,
`~`, parentheses and a redirection whose target has other characters included).

A job range is `VAR=FIRST:LAST` (or `VAR=N`) with 1 <= FIRST <= LAST <= MAX_JOB_NUMBER,
FIRST and LAST written in the digits 0-9, and at most MAX_JOBS jobs; any other
`VAR=VALUE` without a dot or slash where the range goes (`JOB=a:b`, `JOB=0:2`,
`JOB=3:1`, `JOB=1:99999999999999999999`) is an error on every backend, as is a log
path whose directory cannot be created. Errors are one line (line breaks escaped).

Every job writes its log: a header (command, host, start time), the command's
output, and a footer (end time, elapsed seconds, exit status). If any job fails
the launcher exits 1 and names the log(s) to read.

Ctrl-C (a SIGINT to the launcher's process group, which holds the local jobs)
ends the local backend in one line, exit status 130: every running job gets
the interrupt, a job that was starting as it came gets it from the launcher,
and no job starts after it (its log says `# not started: interrupted`).

This file uses the standard library only, so that any python3 on a compute node
can run it; scheduler jobs call it back as `launch.py run-job ...`.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

BACKENDS = ("local", "slurm", "sge")
PROG = {"local": "run.sh", "slurm": "slurm.sh", "sge": "queue.sh"}
CONFIG_NAMES = {"slurm": "conf/slurm.conf", "sge": "conf/queue.conf"}
# Used when no config file exists: the same format as recipes/iwslt/conf/*.conf.
BUILTIN_CONFIG = {
    "slurm": """
submit sbatch --export=ALL
map mem=* --mem-per-cpu=$0
map num-threads=* --cpus-per-task=$0
map gpu=0
map gpu=* --gres=gpu:$0
map time=* --time=$0
map partition=* --partition=$0
""",
    "sge": """
submit qsub -V -cwd -S /bin/bash -j y
map mem=* -l mem_free=$0,ram_free=$0
map num-threads=* -pe smp $0
map gpu=0
map gpu=* -l gpu=$0
map time=* -l h_rt=$0
map queue=* -q $0
""",
}
STATUS_RE = re.compile(r"^# exit status: (-?\d+)$")


class LaunchError(Exception):
    """A usage or configuration error: printed as one line, exit status 2."""


@dataclass
class Request:
    """A parsed launcher command line."""

    options: dict[str, str] = field(default_factory=dict)
    var: str | None = None
    first: int = 1
    last: int = 1
    log: str = ""
    command: str = ""

    def jobs(self) -> list[int]:
        """The job numbers to run."""
        return list(range(self.first, self.last + 1))

    def log_of(self, job: int) -> Path:
        """The log file of one job."""
        return Path(substitute(self.log, self.var, job))

    def command_of(self, job: int) -> str:
        """The bash command line of one job."""
        return substitute(self.command, self.var, job)


# ------------------------------------------------------------------ command line

def substitute(text: str, var: str | None, job: int) -> str:
    """Replace the job variable (as a word of letters and digits) by the job number."""
    if var is None:
        return text
    return re.sub(rf"(?<![A-Za-z0-9]){re.escape(var)}(?![A-Za-z0-9])", str(job), text)


OPERATORS = {"|", "||", "&&", ";", "&", "|&"}
REDIRECTION = re.compile(r"(\d*|&)(>>?|<)&?[\w@%+=:,./-]*")


def shell_join(args: list[str]) -> str:
    """Join arguments for bash: operators (`|`, `;`, `&&`) and redirections (`>f`, `2>&1`)
    keep their shell meaning; every other argument reaches the command as one word, unchanged."""
    return " ".join(a if a in OPERATORS or REDIRECTION.fullmatch(a) else shlex.quote(a) for a in args)


# `NAME=VALUE` without a dot or slash in VALUE is a job range, not a log file name.
RANGE_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[^/.]*")


MAX_JOBS = 10_000             # jobs in one range (one job array), on every backend
MAX_JOB_NUMBER = 1_000_000    # the largest job number


def shown(text: str) -> str:
    """`text` as an error quotes it: at most 60 characters."""
    return text if len(text) <= 60 else text[:50] + "..."


def job_number(digits: str) -> int:
    """The number `digits` (0-9) write, or MAX_JOB_NUMBER + 1 for any larger one (thousands of
    digits are never converted: Python refuses to)."""
    n = digits.lstrip("0") or "0"
    return int(n) if len(n) <= len(str(MAX_JOB_NUMBER)) else MAX_JOB_NUMBER + 1


def parse_range(arg: str) -> tuple[str, int, int]:
    """`JOB=1:4` -> ("JOB", 1, 4); `JOB=3` -> ("JOB", 3, 3). Jobs are numbered from 1 to at most
    MAX_JOB_NUMBER, at most MAX_JOBS of them in one range; anything else is a LaunchError."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)(?::([0-9]+))?", arg)
    arg = shown(arg)
    if not m:
        raise LaunchError(f"bad job range '{arg}' (expected VAR=FIRST:LAST, e.g. JOB=1:4, or VAR=N)")
    first, last = job_number(m.group(2)), job_number(m.group(3) or m.group(2))
    if first < 1:
        raise LaunchError(f"bad job range '{arg}': jobs are numbered from 1")
    if last > MAX_JOB_NUMBER:
        raise LaunchError(f"bad job range '{arg}': job numbers go up to {MAX_JOB_NUMBER}")
    if last < first:
        raise LaunchError(f"empty job range '{arg}' (LAST is below FIRST)")
    if last - first + 1 > MAX_JOBS:
        raise LaunchError(f"job range '{arg}' has {last - first + 1} jobs: at most {MAX_JOBS} run in one "
                          f"launch (split the work into fewer, larger jobs)")
    return m.group(1), first, last


def parse_args(argv: list[str]) -> Request:
    """Parse `[--opt value]... [VAR=a:b] LOG COMMAND...`."""
    req = Request()
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        name, eq, value = argv[i][2:].partition("=")
        if not eq:
            if i + 1 >= len(argv):
                raise LaunchError(f"option --{name} needs a value")
            value = argv[i + 1]
            i += 1
        req.options[name.replace("_", "-")] = value
        i += 1
    if i < len(argv) and RANGE_LIKE.fullmatch(argv[i]):
        req.var, req.first, req.last = parse_range(argv[i])
        i += 1
    width = req.options.get("max-jobs-run")
    if width is not None and not (re.fullmatch(r"0*[1-9][0-9]{0,5}", width)):
        raise LaunchError(f"--max-jobs-run expects a positive number up to 999999, got '{shown(width)}'")
    if len(argv) - i < 2:
        raise LaunchError("usage: [--opt value]... [JOB=1:N] LOG COMMAND [ARG]...")
    req.log = argv[i]
    req.command = shell_join(argv[i + 1:])
    if req.var and req.last > req.first and not re.search(
            rf"(?<![A-Za-z0-9]){re.escape(req.var)}(?![A-Za-z0-9])", req.log):
        raise LaunchError(f"log name '{req.log}' must contain {req.var} for a range of jobs")
    return req


# ------------------------------------------------------------------ one job

def _now() -> str:
    t = time.time()
    return f"{_dt.datetime.fromtimestamp(t).isoformat(sep=' ', timespec='milliseconds')} (epoch {t:.6f})"


class Interrupts:
    """Ctrl-C while jobs run in threads (the local backend), from `__enter__` (main thread) on.

    A Ctrl-C reaches the jobs running in the launcher's process group, but not one whose
    process is created after the signal was sent, even by a millisecond: under load a job
    thread can sit for that long between its log header and its process. So Python's C-level
    signal handler writes to a pipe the moment the signal arrives (`signal.set_wakeup_fd`),
    and `call` looks at the pipe before a job's process is created (set: the job does not
    start) and after (set now: the signal came while the process was being created, which may
    have missed it, so it is sent again; at worst a process a few milliseconds old gets a
    second SIGINT). No KeyboardInterrupt is raised meanwhile: one raised in the main thread
    while it hands out jobs can leave a worker thread that the pool no longer waits for (its
    job then outlives the launcher's report); `raise_if_came` raises it once every job ended."""

    def __enter__(self) -> "Interrupts":
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.previous = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        self.handler = signal.signal(signal.SIGINT, lambda signum, frame: None)  # noted by the pipe
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self.handler)
        signal.set_wakeup_fd(self.previous)
        os.close(self.read)
        os.close(self.write)

    def came(self) -> bool:
        """True once a SIGINT has arrived (the pipe is never read: it stays readable)."""
        return bool(select.select([self.read], [], [], 0)[0])

    def raise_if_came(self) -> None:
        """KeyboardInterrupt if a SIGINT came."""
        if self.came():
            raise KeyboardInterrupt

    def call(self, argv: list[str], **popen: object) -> int | None:
        """`subprocess.call(argv, **popen)`, or None when a SIGINT came before it could start."""
        if self.came():
            return None
        with subprocess.Popen(argv, **popen) as proc:
            if self.came():
                proc.send_signal(signal.SIGINT)
            return proc.wait()


def run_job(command: str, log: Path, label: str, interrupts: Interrupts | None = None) -> int:
    """Run one job's command with bash, writing header, output and footer to `log`; with
    `interrupts` (jobs in threads), a job does not start after a Ctrl-C (exit status 130)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    with open(log, "w", encoding="utf-8") as f:
        f.write(f"# {label}\n# command: {command}\n# host: {socket.gethostname()}\n# started: {_now()}\n")
        f.flush()
        argv, popen = ["bash", "-c", command], dict(stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = interrupts.call(argv, **popen) if interrupts else subprocess.call(argv, **popen)
        except KeyboardInterrupt:
            rc = 130
        if rc is None:
            f.write("# not started: interrupted\n")
            rc = 130
        f.flush()
        f.write(f"# ended: {_now()}, elapsed {time.time() - start:.2f} s\n# exit status: {rc}\n")
    return rc


def job_status(log: Path) -> int | None:
    """The exit status recorded in a job's log footer; None if the job did not finish."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.path.getsize(log) - 200))
            tail = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    m = STATUS_RE.match(tail[-1]) if tail else None
    return int(m.group(1)) if m else None


# ------------------------------------------------------------------ config files

def read_config(text: str, origin: str) -> tuple[list[str], dict[str, str], list[tuple[str, str, list[str]]]]:
    """Parse a config: (submit command, defaults, [(option, value or '*', flags)])."""
    submit: list[str] = []
    defaults: dict[str, str] = {}
    maps: list[tuple[str, str, list[str]]] = []
    for n, line in enumerate(text.splitlines(), 1):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        kind, rest = words[0], words[1:]
        if kind == "submit" and rest:
            submit = rest
        elif kind in ("default", "map") and rest and "=" in rest[0]:
            opt, _, value = rest[0].partition("=")
            if kind == "default":
                if len(rest) != 1:
                    raise LaunchError(f"{origin}:{n}: 'default' takes one option=value")
                defaults[opt] = value
            else:
                maps.append((opt, value, rest[1:]))
        else:
            raise LaunchError(f"{origin}:{n}: expected 'submit CMD...', 'default OPT=VALUE' or "
                              f"'map OPT=VALUE FLAGS...', got: {line.strip()}")
    if not submit:
        raise LaunchError(f"{origin}: no 'submit' line")
    return submit, defaults, maps


def scheduler_flags(options: dict[str, str], config: str, origin: str) -> list[str]:
    """The submit command plus the flags for `options` (and the config's defaults)."""
    submit, defaults, maps = read_config(config, origin)
    flags = list(submit)
    for opt, value in {**defaults, **options}.items():
        exact = [f for o, v, f in maps if o == opt and v == value]
        star = [f for o, v, f in maps if o == opt and v == "*"]
        if not exact and not star:
            raise LaunchError(f"{origin}: no 'map {opt}=...' line for option --{opt}")
        flags += [w.replace("$0", value) for w in (exact or star)[0]]
    return flags


def load_config(backend: str, options: dict[str, str]) -> tuple[str, str]:
    """Config text and its name: --config, else conf/<scheduler>.conf here, else built in."""
    explicit = options.pop("config", None)
    path = explicit or CONFIG_NAMES[backend]
    if Path(path).is_file():
        return Path(path).read_text(encoding="utf-8"), path
    if explicit:
        raise LaunchError(f"config file not found: {path}")
    return BUILTIN_CONFIG[backend], f"(built-in {backend} config)"


# ------------------------------------------------------------------ backends

def run_local(req: Request) -> None:
    """Run the jobs as local processes, at most --max-jobs-run at once."""
    jobs = req.jobs()
    width = int(req.options.get("max-jobs-run", len(jobs)))
    with Interrupts() as stop:
        with ThreadPoolExecutor(max_workers=max(1, min(width, len(jobs)))) as pool:
            list(pool.map(lambda j: run_job(req.command_of(j), req.log_of(j), _label("local", req, j), stop), jobs))
        stop.raise_if_came()


def _label(backend: str, req: Request, job: int) -> str:
    rng = f"{req.var}={req.first}:{req.last}" if req.var else "single job"
    return f"punctkit launcher ({backend}): job {job} of {rng}"


def job_script(backend: str, req: Request) -> Path:
    """Write the batch script a scheduler runs for every task: it calls `run-job` back."""
    qdir = req.log_of(req.first).parent / "q"
    qdir.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"\.log$", "", Path(substitute(req.log, req.var, 0)).name.replace(".0.", "."))
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "job"
    script = qdir / f"{name}.sh"
    task = {"slurm": "${SLURM_ARRAY_TASK_ID}", "sge": "${SGE_TASK_ID}"}[backend]
    call = [sys.executable, os.path.abspath(__file__), "run-job", backend,
            "--range", f"{req.var or ''}={req.first}:{req.last}", "--task"]
    script.write_text(
        "#!/bin/bash\n"
        f"# written by utils/launch.py ({backend}); one array task per job\n"
        f"cd {shlex.quote(os.getcwd())}\n"
        f"exec {shell_join(call)} \"{task}\" {shlex.quote(req.log)} {shlex.quote(req.command)}\n",
        encoding="utf-8")
    script.chmod(0o755)
    return script


def submit_command(backend: str, req: Request) -> list[str]:
    """The full sbatch/qsub command line that submits the job array and waits for it."""
    opts = dict(req.options)
    width = opts.pop("max-jobs-run", None)
    config, origin = load_config(backend, opts)
    flags = scheduler_flags(opts, config, origin)
    script = job_script(backend, req)
    qdir, base = script.parent, script.stem
    n = req.last - req.first + 1
    if backend == "slurm":
        array = f"{req.first}-{req.last}" + (f"%{width}" if width and int(width) < n else "")
        return flags + ["--parsable", f"--array={array}", f"--job-name={base}",
                        f"--output={qdir}/{base}.%a.out", str(script)]
    array = ["-t", f"{req.first}-{req.last}"] + (["-tc", str(width)] if width else [])
    return flags + ["-sync", "y"] + array + ["-N", base, "-o", f"{qdir}/{base}.$TASK_ID.out", str(script)]


def run_scheduler(backend: str, req: Request) -> None:
    """Submit one job array, wait until every task has ended."""
    cmd = submit_command(backend, req)
    for j in req.jobs():  # a stale footer must not pass for this run's result
        req.log_of(j).unlink(missing_ok=True)
    if backend == "slurm":
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise LaunchError(f"sbatch failed (status {r.returncode}): {r.stderr.strip()} [{shell_join(cmd)}]")
        jobid = r.stdout.strip().split(";")[0]
        try:
            wait_slurm(jobid, req)
        except KeyboardInterrupt:
            subprocess.call(["scancel", jobid])
            raise
        return
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)  # qsub -sync y: waits itself
    jobid = ""
    try:
        m = re.search(r"\d+", proc.stdout.readline() if proc.stdout else "")
        jobid = m.group(0) if m else ""
        proc.communicate()
    except KeyboardInterrupt:
        if jobid:
            subprocess.call(["qdel", jobid])
        raise
    if proc.returncode != 0 and all(job_status(req.log_of(j)) is None for j in req.jobs()):
        raise LaunchError(f"qsub failed (status {proc.returncode}): {shell_join(cmd)}")


def wait_slurm(jobid: str, req: Request) -> None:
    """Poll until every task's log has its footer, or squeue no longer knows the job."""
    delay = 0.2
    while True:
        if all(job_status(req.log_of(j)) is not None for j in req.jobs()):
            return
        r = subprocess.run(["squeue", "-h", "-j", jobid, "-o", "%i"], capture_output=True, text=True)
        if (r.returncode == 0 and not r.stdout.strip()) or "Invalid job id" in r.stderr:
            # gone from the queue: allow a shared filesystem a few seconds to show the logs
            for _ in range(10):
                if all(job_status(req.log_of(j)) is not None for j in req.jobs()):
                    return
                time.sleep(1)
            return
        time.sleep(delay)
        delay = min(delay * 1.5, 5.0)


def report(backend: str, req: Request) -> int:
    """Check every job's log footer; name the logs of failed jobs. Returns the exit status."""
    failed = [j for j in req.jobs() if job_status(req.log_of(j)) != 0]
    if not failed:
        return 0
    total = len(req.jobs())
    for j in failed:
        st = job_status(req.log_of(j))
        why = f"exit status {st}" if st is not None else "no exit status (killed or never started)"
        extra = ""
        if st is None and backend != "local":
            extra = f"; scheduler output in {req.log_of(j).parent / 'q'}/"
        print(f"{PROG[backend]}: job {j} failed ({why}); see {req.log_of(j)}{extra}",
              file=sys.stderr)
    print(f"{PROG[backend]}: {len(failed)} of {total} job(s) failed", file=sys.stderr)
    return 1


def make_log_dirs(req: Request) -> None:
    """Create every job's log directory before any job starts; a path that cannot be one
    (under a regular file, on a read-only filesystem) is a one-line error."""
    for j in req.jobs():
        log = req.log_of(j)
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise LaunchError(f"cannot create the log {log}: a parent is a file, not a directory") from None
        except OSError as e:
            raise LaunchError(f"cannot create the log {log}: {e.strerror or e}") from None
        if log.is_dir():
            raise LaunchError(f"cannot write the log {log}: it is a directory")


def launch(backend: str, argv: list[str]) -> int:
    """Parse, run on `backend`, and report."""
    req = parse_args(argv)
    make_log_dirs(req)
    if backend == "local":
        run_local(req)
    else:
        run_scheduler(backend, req)
    return report(backend, req)


def run_task(argv: list[str]) -> int:
    """`run-job BACKEND --range VAR=a:b --task N LOG COMMAND`: one task inside a job array."""
    backend, _, rng, _, task, log, command = argv
    var, _, span = rng.partition("=")
    first, _, last = span.partition(":")
    req = Request(var=var or None, first=int(first), last=int(last), log=log, command=command)
    job = int(task)
    sched_id = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("JOB_ID")
    label = _label(backend, req, job) + (f" (scheduler job {sched_id}.{job})" if sched_id else "")
    return run_job(req.command_of(job), req.log_of(job), label)


LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits at


def one_line(text: str) -> str:
    """`text` with every line break shown escaped (`\\n`), so that an error is one line."""
    return "".join(ascii(c)[1:-1] if c in LINE_BREAKS else c for c in text)


def main(argv: list[str]) -> int:
    """Entry point: `launch.py BACKEND ...` or `launch.py run-job ...`."""
    try:
        if argv and argv[0] == "run-job":
            return run_task(argv[1:])
        if not argv or argv[0] not in BACKENDS:
            raise LaunchError(f"first argument must be one of {', '.join(BACKENDS)}")
        return launch(argv[0], argv[1:])
    except LaunchError as e:
        prog = PROG.get(argv[0], "launch.py") if argv else "launch.py"
        print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. a log that cannot be written once jobs run: one line, not a traceback
        prog = PROG.get(argv[0], "launch.py") if argv else "launch.py"
        where = f"{e.filename}: " if e.filename is not None else ""
        print(f"{prog}: error: {one_line(f'{where}{e.strerror or e}')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C (the jobs got it too and log their own end): one line
        prog = PROG.get(argv[0], "launch.py") if argv else "launch.py"
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
