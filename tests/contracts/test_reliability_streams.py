"""Issue 56, kinds 1, 3, 4, 5 and 6: closed standard streams, input without end, named pipes, locales
that cannot show the words, and terminal control characters in messages.

Each case runs the command as a user does, in a subprocess: a closed descriptor is closed in the child
before it starts (as `>&-` does), FIFOs are made with os.mkfifo, /dev/zero runs under a time limit and
an address-space limit (its peak RSS read from /proc: VmHWM), Latin-1 comes from PYTHONIOENCODING.
"""
from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from punct_util import cli_error
from punctkit.files import MAX_LINE_BYTES, PunctkitError, decode_lines, shown, text_codec

ROOT = Path(__file__).resolve().parents[2]
TEXT = "so i am here do you know why\nthank you very much\n"
CJK = "你好 世界 👍 so i am here\n"


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("PUNCTKIT_DEBUG", "PYTHONIOENCODING")}
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e["LC_ALL"] = "C.UTF-8"
    e.update(extra)
    return e


def closing(*fds: int):  # noqa: ANN201 (a preexec_fn)
    def pre() -> None:
        for fd in fds:
            os.close(fd)
    return pre


def run(*args: object, closed: tuple[int, ...] = (), stdin=None, input: str | None = None,  # noqa: A002
        extra_env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """`punctkit ARGS` with the descriptors in `closed` closed; stdout and stderr captured where open."""
    return subprocess.run([sys.executable, "-m", "punctkit.cli", *map(str, args)],
                          stdin=stdin if input is None else None, input=input,
                          stdout=None if 1 in closed else subprocess.PIPE,
                          stderr=None if 2 in closed else subprocess.PIPE,
                          text=True, env=env(**(extra_env or {})), timeout=timeout,
                          preexec_fn=closing(*closed) if closed else None)


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    p = tmp_path / "in.txt"
    p.write_text(TEXT)
    return p


# ---------------------------------------------------------------- kind 1: closed standard streams

def test_punctuate_stdout_closed(text_file: Path) -> None:
    line = cli_error(run("punctuate", text_file, closed=(1,)))
    assert "standard output is closed" in line and "-o FILE" in line


@pytest.mark.parametrize("fmt", ["readable", "text"])
def test_punctuate_stdout_closed_with_o(text_file: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "out.txt"
    r = run("punctuate", text_file, "--format", fmt, "-o", out, closed=(1,))
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("So I am here")


@pytest.mark.parametrize("args", [("punctuate",), ("punctuate", "-"), ("punctuate", "--stream"),
                                  ("punctuate", "-", "--stream")])
def test_punctuate_stdin_closed(args: tuple[str, ...]) -> None:
    assert "standard input is closed" in cli_error(run(*args, closed=(0,)))


def test_stderr_closed_work_is_done(text_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    r = run("punctuate", text_file, "-o", out, closed=(2,))
    assert r.returncode == 0
    assert out.read_text().splitlines()[0].startswith("So I am here")
    r = run("punctuate", text_file, closed=(2,))  # to standard output, progress and summary unseen
    assert r.returncode == 0 and r.stdout.startswith("So I am here")
    r = run("punctuate", "--stream", closed=(2,), input=TEXT)
    assert r.returncode == 0 and "So I am here" in r.stdout
    r = run("punctuate", tmp_path / "missing.txt", closed=(2,))  # an error still sets the status
    assert r.returncode == 1


def test_stderr_closed_no_descriptor_taken_over(text_file: Path, tmp_path: Path) -> None:
    """With 2 closed, the output file must not become descriptor 2 (where a library's stderr goes)."""
    out = tmp_path / "out.txt"
    code = ("import os, sys; from punctkit.cli import main\n"
            "try:\n    main()\nfinally:\n    os.write(2, b'STRAY ' * 3)\n")
    r = subprocess.run([sys.executable, "-c", code, "punctuate", str(text_file), "-o", str(out)],
                       stdout=subprocess.PIPE, text=True, env=env(), timeout=60, preexec_fn=closing(2))
    assert r.returncode == 0
    assert "STRAY" not in out.read_text()


def test_score_and_stats_stdout_closed(text_file: Path, tmp_path: Path) -> None:
    assert "standard output is closed" in cli_error(run("score", text_file, text_file, closed=(1,)))
    r = run("score", text_file, text_file, "-o", tmp_path / "sc", closed=(1,))  # the files first, then the error
    assert "standard output is closed" in cli_error(r)
    assert (tmp_path / "sc" / "score.json").is_file()
    assert "standard output is closed" in cli_error(run("stats", text_file, closed=(1,)))


def test_prepare_convert_stdout_closed(text_file: Path, tmp_path: Path) -> None:
    r = run("prepare", text_file, "-o", tmp_path / "data", closed=(1,))  # data written, report cannot be
    assert "standard output is closed" in cli_error(r)
    assert (tmp_path / "data" / "text").is_file()
    r = run("convert", text_file, tmp_path / "c.txt", closed=(1,))  # writes no standard output
    assert r.returncode == 0 and (tmp_path / "c.txt").read_text().startswith("so i am here")
    r = run("convert", text_file, tmp_path / "c2.txt", closed=(0, 2))
    assert r.returncode == 0 and (tmp_path / "c2.txt").is_file()


def test_serve_starts_with_streams_closed(tmp_path: Path) -> None:
    for fds in ((0,), (1,), (2,)):
        log = tmp_path / f"serve{fds[0]}.log"
        p = subprocess.Popen([sys.executable, "-m", "punctkit.cli", "serve", "--port", "0", "--log", str(log)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(),
                             preexec_fn=closing(*fds))
        try:
            deadline = time.time() + 30
            while time.time() < deadline and "listening" not in (log.read_text() if log.exists() else ""):
                assert p.poll() is None, f"serve exited with {p.returncode} with fd {fds} closed"
                time.sleep(0.2)
            assert "listening" in log.read_text()
        finally:
            p.terminate()
            p.wait(timeout=30)


# ---------------------------------------------------------------- kind 3: input without end

def run_bounded(args: list[str], stdin) -> tuple[subprocess.CompletedProcess, float, int]:  # noqa: ANN001
    """Run under a 2 GiB address-space limit; returns the result, seconds and peak RSS (bytes)."""
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    t0 = time.time()
    p = subprocess.Popen([sys.executable, "-m", "punctkit.cli", *args], stdin=stdin, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env(), preexec_fn=pre)
    timer = threading.Timer(30, p.kill)
    timer.start()
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        # the child's own high-water mark (VmHWM: its memory since exec), read until it exits; wait4's
        # ru_maxrss would include the peak of this pytest process, which a forked child inherits
        while not done.is_set():
            try:
                for line in open(f"/proc/{p.pid}/status"):
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]) * 1024)
            except (OSError, ValueError):
                pass
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        err = p.stderr.read()  # type: ignore[union-attr]
        done.set()
        watcher.join()
        _, status, usage = os.wait4(p.pid, 0)
    finally:
        done.set()
        timer.cancel()
        p.stderr.close()  # type: ignore[union-attr]
    p.returncode = os.waitstatus_to_exitcode(status)
    return subprocess.CompletedProcess(args, p.returncode, "", err), time.time() - t0, peak[0] or usage.ru_maxrss * 1024


@pytest.mark.parametrize("args", [["punctuate"], ["punctuate", "--stream"], ["punctuate", "--input-format", "text"],
                                  ["punctuate", "--encoding", "utf-16"]])
def test_dev_zero_on_stdin(args: list[str]) -> None:
    with open("/dev/zero", "rb") as zero:
        r, seconds, rss = run_bounded(args, zero)
    line = cli_error(r)
    assert "stdin:1: line longer than 32 MiB" in line
    assert seconds < 10 and rss < 300 << 20, (seconds, rss >> 20)


@pytest.mark.parametrize("cmd", ["punctuate", "convert", "score", "stats", "punctuate-dev-zero"])
def test_sparse_file_of_nuls(cmd: str, tmp_path: Path) -> None:
    f = tmp_path / "sparse"
    with open(f, "wb") as h:
        h.truncate(4 << 30)  # 4 GiB of NULs, no blocks on disk
    args = {"punctuate": ["punctuate", f], "convert": ["convert", f, tmp_path / "c.txt"],
            "score": ["score", f, f], "stats": ["stats", f],
            "punctuate-dev-zero": ["punctuate", "--input-format", "text", "/dev/zero"]}[cmd]
    r, seconds, rss = run_bounded([str(a) for a in args], subprocess.DEVNULL)
    line = cli_error(r)
    assert ":1: line longer than 32 MiB" in line and "break the input into lines" in line
    assert seconds < 10 and rss < 300 << 20, (seconds, rss >> 20)
    assert not (tmp_path / "c.txt").exists()


def test_line_limit_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_codec, "MAX_LINE_BYTES", 1000)
    ok = b"a" * 1000 + b"\n" + b"b" * 1000
    assert [len(t) for _, t in decode_lines(io.BytesIO(ok), "f")] == [1000, 1000]
    for bad, lineno in ((b"x\n" + b"a" * 1001 + b"\n", 2), (b"a" * 1001, 1), (b"a" * 5000, 1)):
        with pytest.raises(PunctkitError, match=f"^f:{lineno}: line longer than"):
            list(decode_lines(io.BytesIO(bad), "f"))


def test_line_limit_boundary_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_codec, "MAX_LINE_BYTES", 1000)
    fine = ("a" * 500 + "\n" + "b" * 10).encode("utf-16")
    assert [len(t) for _, t in decode_lines(io.BytesIO(fine), "f")] == [500, 10]
    with pytest.raises(PunctkitError, match="^f:2: line longer than"):
        list(decode_lines(io.BytesIO(("a\n" + "b" * 501).encode("utf-16")), "f"))


def test_large_normal_input_still_reads() -> None:
    """A 5 MB word and many lines stay within the limits (the limit is far above them)."""
    word = b"w" * (5 << 20)
    got = list(decode_lines(io.BytesIO(word + b"\n" + b"x y\n" * 200_000), "f"))
    assert len(got) == 200_001 and len(got[0][1]) == 5 << 20
    assert MAX_LINE_BYTES >= 16 << 20


# ---------------------------------------------------------------- kind 4: named pipes

def fifo_with(tmp_path: Path, name: str, data: str) -> Path:
    """A FIFO that a thread fills with `data` once a reader opens it."""
    p = tmp_path / name
    os.mkfifo(p)

    def feed() -> None:
        with open(p, "w") as f:
            f.write(data)
    threading.Thread(target=feed, daemon=True).start()
    return p


@pytest.mark.parametrize("fmt", [None, "text"])
def test_punctuate_fifo(tmp_path: Path, fmt: str | None) -> None:
    p = fifo_with(tmp_path, "in.fifo", TEXT)
    r = run("punctuate", p, *(("--input-format", fmt) if fmt else ()))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["So I am here. Do you know why?", "Thank you very much."]


def test_punctuate_fifo_detects_ctm(tmp_path: Path) -> None:
    ctm = "u1 A 0.0 0.5 hello\nu1 A 0.5 0.5 world\nu2 A 1.0 0.5 thank\nu2 A 1.5 0.5 you\n"
    r = run("punctuate", fifo_with(tmp_path, "in.fifo", ctm), "--format", "ctm")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 4 and r.stdout.startswith("u1 A 0.0")  # detected as CTM, read once


def test_process_substitution(tmp_path: Path, text_file: Path) -> None:
    """`<(cat x)`: /dev/fd/N, a pipe, for punctuate, convert and score."""
    out = tmp_path / "c.txt"
    pk = f"{sys.executable} -m punctkit.cli"
    script = (f"{pk} punctuate --input-format text <(cat {text_file}) && {pk} punctuate <(cat {text_file}) && "
              f"{pk} convert <(cat {text_file}) {out} && "
              f"{pk} score --json <(cat {text_file}) <(cat {text_file}) > {tmp_path / 's.json'}")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env(), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["So I am here. Do you know why?", "Thank you very much."] * 2
    assert out.read_text() == TEXT
    assert json.loads((tmp_path / "s.json").read_text())["counts"]["ref_words"] == 12


def test_convert_and_score_fifo(tmp_path: Path, text_file: Path) -> None:
    out = tmp_path / "c.txt"
    r = run("convert", fifo_with(tmp_path, "a.fifo", "Hello, world.\n"), out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "Hello, world.\n"
    r = run("score", "--json", fifo_with(tmp_path, "r.fifo", TEXT), fifo_with(tmp_path, "h.fifo", TEXT))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["counts"]["hyp_words"] == 12


def test_urandom_is_read_not_refused() -> None:
    r = run("punctuate", "--input-format", "text", "/dev/urandom", timeout=30)
    line = cli_error(r)
    assert "file not found" not in line and "not a regular file" not in line
    assert line.startswith("punctkit: error: /dev/urandom:")  # bytes that are not UTF-8, named where


def test_fifo_read_once(tmp_path: Path) -> None:
    """The head detection read is the start of what the reader reads: no line lost or repeated."""
    lines = [f"line {i} of many words here" for i in range(20000)]  # well past the detection head
    p = fifo_with(tmp_path, "big.fifo", "\n".join(lines) + "\n")
    r = run("convert", "--to", "text", p, tmp_path / "o.txt")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o.txt").read_text().splitlines() == lines


# ---------------------------------------------------------------- kind 5: locales

@pytest.mark.parametrize("enc", ["latin-1", "ascii"])
def test_latin1_locale_writes_utf8(tmp_path: Path, enc: str) -> None:
    p = tmp_path / "cjk.txt"
    p.write_text(CJK, encoding="utf-8")
    for args in (("punctuate", p), ("punctuate", "--stream")):
        r = subprocess.run([sys.executable, "-m", "punctkit.cli", *map(str, args)], input=CJK.encode(),
                           capture_output=True, env=env(PYTHONIOENCODING=enc), timeout=60)
        assert r.returncode == 0, r.stderr
        words = r.stdout.decode("utf-8").split()  # UTF-8, whatever the locale
        assert [w.strip(",.?!") for w in words[:3]] == ["你好", "世界", "👍"]
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "--input-format", "ctm", str(p)],
                       capture_output=True, env=env(PYTHONIOENCODING=enc), timeout=60)
    assert r.returncode == 1 and b"Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


# ---------------------------------------------------------------- kind 6: control characters in messages

RAW = ("\x1b", "\x07", "\x08", "\x9b", "\u202e", "\r")


def assert_escaped(line: str) -> None:
    for c in RAW:
        assert c not in line, repr(line)


def test_prepare_and_score_unknown_label(tmp_path: Path) -> None:
    f = tmp_path / "a.tsv"
    f.write_text("hello\tO\nworld\tPERIOD\nfoo\tX\x1b[2J\x07\x08\n")
    line = cli_error(run("prepare", "--from", "twocol", f, "-o", tmp_path / "d"))
    assert_escaped(line)
    assert "\\x1b[2J\\x07\\x08" in line and ":3:" in line
    line = cli_error(run("score", "--ref-format", "twocol", "--hyp-format", "twocol", f, f))
    assert_escaped(line)
    assert "\\x1b" in line


def test_ctm_utterance_id(tmp_path: Path) -> None:
    f = tmp_path / "c.ctm"
    f.write_text("u\x1b]52;c;AAAA\x07t1 A 0.0 0.5 hello\nu1 A 0.0 0.5 hello\nu\x1b]52;c;AAAA\x07t1 A 0.5 0.5 x\n")
    line = cli_error(run("punctuate", f))
    assert_escaped(line)
    assert "\\x1b]52;c;AAAA\\x07" in line and "c.ctm:3" in line


def test_prepare_report_examples_escaped(tmp_path: Path) -> None:
    f = tmp_path / "r.txt"
    f.write_text("Reviewer:\x1b[31m \u202ex\nhello world.\n")
    r = run("prepare", f, "-o", tmp_path / "d", "--drop-lines", "Reviewer:")
    assert r.returncode == 0, r.stderr
    assert_escaped(r.stdout)
    assert "\\x1b[31m" in r.stdout


def test_paths_and_usage_errors_escaped(tmp_path: Path) -> None:
    assert_escaped(cli_error(run("punctuate", tmp_path / "no\x1b[2Jsuch\x07.txt")))
    r = run("punctuate", "--format", "x\x1b[31m")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert_escaped(r.stderr)
    assert "x\\x1b[31m" in r.stderr


def test_error_type_escapes_centrally() -> None:
    msg = str(PunctkitError("f:1: unknown label 'X\x1b[2J\x07\x08\u202e\x9b\n'"))
    assert_escaped(msg)
    assert "\n" not in msg and "\\x1b[2J" in msg
    assert shown(msg) == msg  # idempotent
    assert shown("中文 👍\u200d🔥") == "中文 👍\u200d🔥"  # scripts, emoji and joiners stay readable


def test_a_json_document_without_end_is_one_line_in_bounded_memory(tmp_path, monkeypatch):
    """A Whisper/Vosk document is read whole only up to MAX_DOCUMENT_CHARS (here lowered)."""
    from punctkit.data.formats import json_docs, recognizers

    monkeypatch.setattr(json_docs, "MAX_DOCUMENT_CHARS", 10_000)
    big = tmp_path / "w.json"
    big.write_text('{"segments": [\n' + '{"text": " so", "words": []},\n' * 2000 + '{"text": ""}]}\n')
    from punctkit.files import PunctkitError

    with pytest.raises(PunctkitError, match=r"w.json:\d+: a JSON document \(Whisper, Vosk, .*\) longer than"):
        recognizers.read_json_text(big, None)


def test_progress_and_warnings_on_stderr_escape_what_they_quote(tmp_path):
    """Every message on standard error escapes the control characters of what it quotes, not only errors."""
    import subprocess
    import sys

    src = tmp_path / "x.txt"
    src.write_text("hi there.\n")
    out = tmp_path / "d\x1b[31mX.txt"
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "convert", str(src), str(out), "--to", "text"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stderr and "\\x1b[31mX" in r.stderr
