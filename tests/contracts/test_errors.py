"""Every user error is one line on stderr, never a traceback.

A subprocess per case, as a user runs the command: exit status 2 for usage errors
(click's convention), 1 for files and data; exactly one stderr line; no traceback
unless PUNCTKIT_DEBUG=1 (or --debug) asks for one. These machines run as root, so
unwritable places are paths under a regular file, /proc and /dev/full.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BAD = Path(__file__).resolve().parents[1] / "bad_inputs" / "errors"
TEXT = BAD / "punctuated.txt"  # two punctuated lines: a valid input
ROOT = Path(__file__).resolve().parents[2]


def run(*args: object, debug: bool = False, stdout=subprocess.PIPE, code: str | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`punctkit ARGS...` (or `python -c CODE ARGS...` that ends in cli.main) with a time limit:
    a command that never returns fails the test instead of hanging it."""
    env = {k: v for k, v in os.environ.items() if k != "PUNCTKIT_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if debug:
        env["PUNCTKIT_DEBUG"] = "1"
    head = [sys.executable, "-c", code] if code else [sys.executable, "-m", "punctkit.cli"]
    return subprocess.run(head + [str(a) for a in args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=env, timeout=60, cwd=cwd)


def one_line(r: subprocess.CompletedProcess, status: int) -> str:
    """The single stderr line of a failed command (checked: status, one line, no traceback)."""
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("punctkit: "), r.stderr
    assert r.returncode == status, r.stderr
    return lines[0]


# ---------------------------------------------------------------- usage errors (status 2)

@pytest.mark.parametrize("args, says", [
    (["prepare"], "prepare: Missing option '--out'"),
    (["score", "a"], "score: Missing argument 'hyp'"),
    (["score", "a", "b", "--no-such-option"], "No such option: --no-such-option"),
    (["score", "a", "b", "--samples", "many"], "Invalid value for '--samples'"),
    (["no-such-command"], "No such command 'no-such-command'"),
    (["--no-such-option"], "No such option: --no-such-option"),
])
def test_usage_errors_are_one_line(args: list[str], says: str) -> None:
    line = one_line(run(*args), 2)
    assert line.startswith("punctkit: error: ") and says in line and "--help" in line


def test_version_and_bare_command() -> None:
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"punctkit {__import__('punctkit').__version__}"
    r = run()  # no command: the help, not a traceback
    assert "Traceback" not in r.stderr and "Usage: punctkit" in r.stdout + r.stderr


@pytest.mark.parametrize("args, option", [
    (["prepare", TEXT, "-o", "OUT", "--block-len", "-5"], "--block-len"),
    (["prepare", TEXT, "-o", "OUT", "--block-len", "0"], "--block-len"),
    (["prepare", TEXT, "-o", "OUT", "--rechunk", "50-25"], "--rechunk"),
    (["prepare", TEXT, "-o", "OUT", "--rechunk", "0"], "--rechunk"),
    (["prepare", TEXT, "-o", "OUT", "--rechunk", "25-50,x"], "--rechunk"),
    (["prepare", TEXT, "-o", "OUT", "--lines", "5:2"], "--lines"),
    (["prepare", TEXT, "-o", "OUT", "--lines", "a:b"], "--lines"),
    (["score", TEXT, TEXT, "--bootstrap", TEXT, "--samples", "0"], "--samples"),
    (["score", TEXT, TEXT, "--bootstrap", TEXT, "--block-len", "0"], "--block-len"),
    (["decode", "EXP", "DATA", "OUT", "--beam", "0"], "--beam"),
    (["decode", "EXP", "DATA", "OUT", "--nbest", "0"], "--nbest"),
    (["decode", "EXP", "DATA", "OUT", "--batch-size", "0"], "--batch-size"),
    (["decode", "EXP", "DATA", "OUT", "--window", "0"], "--window"),
    (["decode", "EXP", "DATA", "OUT", "--step", "-1"], "--step"),
    (["punctuate", TEXT, "-m", "M", "--threads", "-1"], "--threads"),
    (["punctuate", TEXT, "-m", "M", "--chunk-words", "0"], "--chunk-words"),
    (["punctuate", TEXT, "-m", "M", "--batch-size", "0"], "--batch-size"),
    (["punctuate", TEXT, "-m", "M", "--ngpu", "-1"], "--ngpu"),
    (["train", "--config", "C", "--train-dir", "D", "--exp", "E", "--nproc", "0"], "--nproc"),
    (["average-checkpoints", "EXP", "--n", "0"], "--n"),
    (["bpe", "train", "DATA", "OUT", "--merges", "0"], "--merges"),
    (["bpe", "train", "DATA", "OUT", "--vocab-size", "0"], "--vocab-size"),
    (["w2v-train", "DATA", "OUT", "--dim", "0"], "--dim"),
    (["w2v-train", "DATA", "OUT", "--workers", "0"], "--workers"),
    (["split-data", "DATA", "0"], "'n'"),
    (["extract-feats", "DATA", "FEATS", "--nj", "0"], "--nj"),
    (["extract-feats", "DATA", "FEATS", "--nj", "2", "--job", "3"], "--job"),
    (["synthesize", "SRC", "OUT", "--rates", "0,150"], "--rates"),
    (["synthesize", "SRC", "OUT", "--nj", "0"], "--nj"),
    (["prepare", TEXT, "-o", "OUT", "--inventory", "5class"], "--inventory"),
    (["prepare", TEXT, "-o", "OUT", "--from", "csv"], "--from"),
    (["convert", TEXT, "OUT", "--to", "json"], "--to"),
    (["score", TEXT, TEXT, "--hyp-format", "srt"], "--hyp-format"),
    (["bpe", "train", "DATA", "OUT", "--kind", "wordpiece"], "--kind"),
    (["extract-feats", "DATA", "FEATS", "--kind", "mfcc"], "--kind"),
    (["decode", "EXP", "DATA", "OUT", "--format", "readable"], "--format"),
    (["punctuate", TEXT, "-m", "M", "--backend", "gpu"], "--backend"),
    (["punctuate", TEXT, "-m", "M", "--input-format", "twocol"], "--input-format"),
    (["punctuate", TEXT, "-m", "M", "--format", "xml"], "--format"),
])
def test_bad_option_values_are_usage_errors_before_any_work(tmp_path: Path, args: list, option: str) -> None:
    """Checked while the command line is parsed: nothing is read or written (OUT never appears)."""
    r = run(*args, cwd=tmp_path)
    line = one_line(r, 2)
    assert f"Invalid value for {option if option.startswith(chr(39)) else repr(option)}" in line
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("block_len, rechunk", [(-5, None), (0, None), (None, "50-25"), (None, "")])
def test_prepare_library_checks_its_options_first(tmp_path: Path, block_len, rechunk) -> None:
    """The library function too: --block-len -5 used to loop forever, 0 was ignored."""
    code = ("import sys; from punctkit.data.prepare import prepare; from punctkit.files import PunctkitError\n"
            "try:\n"
            f"    prepare([{str(TEXT)!r}], {str(tmp_path / 'out')!r}, block_len={block_len!r}, "
            f"rechunk_spec={rechunk!r})\n"
            "except PunctkitError as e:\n"
            "    sys.exit(f'PunctkitError: {e}')\n")
    r = run(code=code)
    assert r.returncode == 1 and r.stderr.startswith("PunctkitError: "), r.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- files (status 1)

def test_missing_input_and_input_under_a_file(tmp_path: Path) -> None:
    line = one_line(run("prepare", tmp_path / "missing.txt", "-o", tmp_path / "d"), 1)
    assert line == f"punctkit: error: file not found: {tmp_path / 'missing.txt'}"
    line = one_line(run("score", TEXT / "x", TEXT), 1)
    assert str(TEXT / "x") in line


def test_a_directory_where_a_file_is_expected(tmp_path: Path) -> None:
    line = one_line(run("prepare", TEXT, "-o", tmp_path / "d", "--rules", tmp_path), 1)
    assert str(tmp_path) in line
    line = one_line(run("punctuate", TEXT, "-m", tmp_path), 1)
    assert str(tmp_path) in line
    (tmp_path / "score.txt").mkdir()  # an output file's name taken by a directory
    line = one_line(run("score", TEXT, TEXT, "-o", tmp_path), 1)
    assert line == f"punctkit: error: {tmp_path / 'score.txt'}: Is a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["score.txt"]


def test_average_checkpoints_of_a_package_or_nothing(tmp_path: Path) -> None:
    package = ROOT / "punctkit" / "pretrained" / "fast.pkt"  # a packed model: no checkpoints in it
    line = one_line(run("average-checkpoints", package, "--out", tmp_path / "avg.pt"), 1)
    assert f"{package}: a file, not a trained model directory" in line and "experiment it was packed from" in line
    line = one_line(run("average-checkpoints", tmp_path / "exp", "--out", tmp_path / "avg.pt"), 1)
    assert line == f"punctkit: error: model directory not found: {tmp_path / 'exp'}"
    assert list(tmp_path.iterdir()) == []


def test_output_under_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("mine\n")
    line = one_line(run("prepare", TEXT, "-o", tmp_path / "afile" / "d"), 1)
    assert line == f"punctkit: error: {tmp_path / 'afile'}: is a file, not a directory"
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_output_under_proc(tmp_path: Path) -> None:
    line = one_line(run("convert", TEXT, "/proc/punctkit-test/out.txt"), 1)
    assert line.startswith("punctkit: error: /proc/")


def test_full_disk(tmp_path: Path) -> None:
    """`-o /dev/full` and a full standard output: the path (or stream) and the reason, one line."""
    line = one_line(run("convert", TEXT, "/dev/full", "--to", "text"), 1)
    assert line == "punctkit: error: /dev/full: No space left on device"
    with open("/dev/full", "w") as full:
        line = one_line(run("score", TEXT, TEXT, stdout=full), 1)
    assert line == "punctkit: error: standard output: No space left on device"


WRITE_FAILS = """
import errno, os, sys
from punctkit.cli import main

def replace(src, dst, *a, **k):  # the rename that publishes an output
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dst))

os.replace = replace
main()
"""


def test_permission_denied_at_the_write(tmp_path: Path) -> None:
    """Root cannot be denied by chmod, so the OS call itself raises, as it would for a user."""
    out = tmp_path / "out.txt"
    line = one_line(run("convert", TEXT, out, "--to", "text", code=WRITE_FAILS), 1)
    assert line == f"punctkit: error: {out}: Permission denied"
    assert not out.exists() and not list(tmp_path.iterdir())  # the temporary file is gone too


# ---------------------------------------------------------------- bugs and debugging

BUG = """
import json
from punctkit.cli import main

def dumps(*a, **k):
    raise ZeroDivisionError("a stand-in for a bug")

json.dumps = dumps
main()
"""


@pytest.mark.parametrize("enc", ["base64", "rot13"])
def test_an_encoding_that_is_not_a_text_encoding_is_one_line(tmp_path: Path, enc: str) -> None:
    """Python's codecs include bytes-to-bytes (base64, zlib) and text-to-text (rot13) ones, which read no
    text (they were an internal error): --encoding takes text encodings only."""
    line = one_line(run("convert", TEXT, tmp_path / "o.txt", "--encoding", enc), 1)
    assert line == (f"punctkit: error: --encoding '{enc}' is not a text encoding (it does not turn any bytes "
                    f"into text); give one such as utf-8, latin-1, cp1252 or utf-16")
    assert not (tmp_path / "o.txt").exists()


def test_json_nested_thousands_deep_is_one_line(tmp_path: Path) -> None:
    """json alone overflows its stack on such a file (an internal error); punctkit's one JSON reader
    (files.json_value) refuses nesting past 100 levels wherever JSON is read, here a score.json."""
    score = tmp_path / "exp" / "decode_test" / "score.json"
    score.parent.mkdir(parents=True)
    score.write_text('{"overall": ' + "[" * 5000 + "]" * 5000 + "}\n")
    assert one_line(run("results", tmp_path / "exp"), 1) == (
        f"punctkit: error: {score}: not valid JSON (arrays and objects nested more than 100 deep, line 1)")


def test_json_files_punctkit_wrote_that_are_not_utf8_are_one_line(tmp_path: Path) -> None:
    """A score.json or a history.json with bytes that are not UTF-8 (an internal error before)."""
    exp = tmp_path / "exp"
    score = exp / "decode_test" / "score.json"
    score.parent.mkdir(parents=True)
    score.write_bytes(b'{"overall": {"f1": 1.0}, "x": "caf\xe9"}\n')
    assert one_line(run("results", exp), 1) == (
        f"punctkit: error: {score}: byte 0xe9 at offset 34 is not UTF-8 (not a file punctkit wrote)")
    score.write_text('{"overall": {"f1": 1.0, "precision": 1.0, "recall": 1.0}}\n')
    (exp / "history.json").write_bytes(b"[\xff]")
    assert one_line(run("results", exp), 1) == (
        f"punctkit: error: {exp / 'history.json'}: byte 0xff at offset 1 is not UTF-8 (not a file punctkit wrote)")


def test_unexpected_exception_is_one_line_asking_for_a_report() -> None:
    line = one_line(run("score", TEXT, TEXT, "--json", code=BUG), 1)
    assert "ZeroDivisionError: a stand-in for a bug" in line and "PUNCTKIT_DEBUG=1" in line
    r = run("score", TEXT, TEXT, "--json", code=BUG, debug=True)
    assert r.returncode == 1 and "Traceback (most recent call last)" in r.stderr
    assert r.stderr.splitlines()[-1] == line


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    quiet = one_line(run("prepare", missing, "-o", tmp_path / "d"), 1)
    for r in (run("prepare", missing, "-o", tmp_path / "d", debug=True),
              run("--debug", "prepare", missing, "-o", tmp_path / "d")):
        assert r.returncode == 1 and "Traceback (most recent call last)" in r.stderr
        assert r.stderr.splitlines()[-1] == quiet
    r = run("score", "a", debug=True)
    assert r.returncode == 2 and "Traceback" in r.stderr and "Missing argument" in r.stderr.splitlines()[-1]


# ---------------------------------------------------------------- a working directory removed

def run_in_removed_dir(tmp_path: Path, *args: object) -> subprocess.CompletedProcess:
    """`punctkit ARGS...` started in a directory removed after the shell entered it (as a user whose
    directory another shell deleted)."""
    env = {k: v for k, v in os.environ.items() if k != "PUNCTKIT_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    (tmp_path / "gone").mkdir()
    script = 'cd gone && rmdir ../gone && exec "$0" -m punctkit.cli "$@"'
    return subprocess.run(["bash", "-c", script, sys.executable, *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120, cwd=tmp_path)


@pytest.mark.parametrize("args, named", [
    (["punctuate", TEXT, "-o", "rel.txt"], "rel.txt: a relative path"),
    (["punctuate", "rel_in.txt", "-o", "OUT/o.txt"], "rel_in.txt: a relative path"),
    (["convert", TEXT, "rel.txt"], "rel.txt: a relative path"),
    (["prepare", TEXT, "-o", "reldir"], "reldir: a relative path"),
    (["score", "rel_ref.txt", TEXT], "rel_ref.txt"),
    (["decode", "rel_exp", "rel_data", "rel_out.txt"], "rel_exp"),
])
def test_relative_paths_in_a_removed_working_directory_are_one_line(tmp_path: Path, args: list, named: str) -> None:
    args = [tmp_path / "o.txt" if a == "OUT/o.txt" else a for a in args]
    line = one_line(run_in_removed_dir(tmp_path, *args), 1)
    assert named in line and "the working directory no longer exists" in line, line
    assert "No such file or directory" not in line
    assert not (tmp_path / "o.txt").exists()


def test_absolute_paths_work_in_a_removed_working_directory(tmp_path: Path) -> None:
    r = run_in_removed_dir(tmp_path, "punctuate", TEXT, "-o", tmp_path / "out.txt")
    assert r.returncode == 0, r.stderr
    def words(t: str) -> list[str]:
        return [w.strip(",.?!").lower() for w in t.split()]

    assert words((tmp_path / "out.txt").read_text()) == words(TEXT.read_text()) != []


# ---------------------------------------------------------------- errors that help (issue 81, item 7)

def _compressed(kind: str, path: Path, data: bytes) -> Path:
    """`data` compressed as `kind` (gzip, bzip2, xz, zip) into `path`."""
    import bz2
    import gzip
    import lzma
    import zipfile

    if kind == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("talk.txt", data)
    else:
        path.write_bytes({"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind](data))
    return path


COMPRESSED = [("gzip", "talk.txt.gz", "gunzip -k", "zcat"), ("bzip2", "talk.txt.bz2", "bunzip2 -k", "bzcat"),
              ("xz", "talk.txt.xz", "unxz -k", "xzcat"), ("zip", "talk.zip", "unzip", "unzip -p")]


@pytest.mark.parametrize("kind, name, unpack, cat", COMPRESSED)
def test_a_compressed_input_says_so_and_how_to_decompress_it(tmp_path: Path, kind: str, name: str, unpack: str,
                                                             cat: str) -> None:
    """Not "give --encoding latin-1" (which would punctuate the compressed bytes as words): the input is
    compressed, and the command that decompresses it on its way in; with any --encoding, for every command
    that reads text, and on standard input."""
    src = _compressed(kind, tmp_path / name, b"so what do you think nasa will do next\n" * 50)
    for args in (["punctuate", src], ["punctuate", src, "--encoding", "latin-1", "-o", tmp_path / "out.txt"],
                 ["score", src, TEXT], ["score", TEXT, src], ["convert", src, tmp_path / "x.txt"]):
        line = one_line(run(*args), 1)
        assert line == (f"punctkit: error: {src}:1: {kind}-compressed, not text; decompress it first ({unpack} {src}), "
                        f"or on its way in: {cat} {src} | punctkit punctuate -"), line
        assert "latin-1" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no output written
    with open(src, "rb") as stdin:
        r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-"], stdin=stdin,
                           capture_output=True, text=True, timeout=60)
    assert one_line(r, 1) == (f"punctkit: error: stdin:1: {kind}-compressed, not text; decompress it on its way in: "
                              f"{cat} FILE | punctkit punctuate -")


def test_text_that_starts_like_a_compressed_file_is_text(tmp_path: Path) -> None:
    for words in ("BZh9 is a word here", "PK is a word here"):
        (tmp_path / "in.txt").write_text(words + "\n", encoding="utf-8")
        r = run("punctuate", tmp_path / "in.txt")
        assert r.returncode == 0, r.stderr
        assert [w.strip(",.?!").lower() for w in r.stdout.split()] == words.lower().split()


def test_a_compressed_request_body_says_how_to_send_it() -> None:
    import gzip
    import io

    from punctkit.files import PunctkitError, decode_lines

    with pytest.raises(PunctkitError, match=r"^request: gzip-compressed, not text; send the text, or gzip it and "
                                            r"say so with the header Content-Encoding: gzip$"):
        list(decode_lines(io.BytesIO(gzip.compress(b"so what\n")), "request", None, option="charset"))


def test_punctuate_of_a_directory_without_text_names_what_it_holds(tmp_path: Path) -> None:
    """A directory that is no data directory (no `text`): what it holds, never a DIR/text that is not there."""
    d = tmp_path / "audio"
    d.mkdir()
    line = one_line(run("punctuate", d), 1)
    assert line == f"punctkit: error: {d}: an empty directory, which punctuate does not read; give it a file"
    (d / "wav.scp").write_text("u1 u1.wav\n")
    (d / "utt2spk").write_text("u1 s1\n")
    line = one_line(run("punctuate", d), 1)
    assert line == (f"punctkit: error: {d}: a directory holding utt2spk, wav.scp (no text file), which punctuate "
                    f"does not read; give it a file")
    for i in range(5):
        (d / f"talk{i}.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nso what\n")
    (d / "sub").mkdir()
    line = one_line(run("punctuate", d), 1)
    assert f"{d}: a directory holding sub/, talk0.srt, talk1.srt, talk2.srt and 4 more (no text file)" in line
    assert str(d / "text") not in line
    (d / "text").write_text("u1 so what\n")  # a data directory: its text file is named, and decode
    line = one_line(run("punctuate", d), 1)
    assert f"give its text file ({d / 'text'})" in line and "punctkit decode MODEL" in line


NO_XATTRS = """
import os, sys
del os.setxattr, os.getxattr  # a file system that keeps no user attributes (NFS, FAT, older tmpfs)
from punctkit.cli import main
main()
"""


@pytest.mark.parametrize("xattrs", [True, False], ids=["with-xattrs", "without-xattrs"])
def test_o_replaces_its_own_output_and_nothing_else_with_or_without_xattrs(tmp_path: Path, xattrs: bool) -> None:
    """`-o` replaces a file only as punctkit left it (its mark is in the file's modification time, which file
    systems keep): a rerun replaces its output where extended attributes are dropped; a file the user edited
    since, a copy (`cp -a`: shutil.copy2) and a file of the user's are refused in one line naming --overwrite."""
    import contextlib
    import shutil

    code = None if xattrs else NO_XATTRS
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("so what do you think\n")
    for _ in range(2):  # the second run replaces the first's output
        r = run("punctuate", src, "-o", out, code=code)
        assert r.returncode == 0, r.stderr
    if xattrs:  # the attribute dropped on the way (a copy back from NFS, a backup tool): still punctkit's
        with contextlib.suppress(OSError):
            os.removexattr(out, "user.punctkit")
        assert run("punctuate", src, "-o", out).returncode == 0
    shutil.copy2(out, tmp_path / "copy.txt")
    with open(out, "a") as f:
        f.write("my note\n")
    for target in (out, tmp_path / "copy.txt"):
        before = target.read_bytes()
        line = one_line(run("punctuate", src, "-o", target, code=code), 1)
        assert line == (f"punctkit: error: {target}: exists and punctkit did not write it (or it changed since); "
                        f"name another output, move it away, or give --overwrite to replace it")
        assert target.read_bytes() == before
    assert run("punctuate", src, "-o", out, "--overwrite", code=code).returncode == 0
    replaced = out.read_text()
    assert replaced.startswith("So") and replaced.lower().replace(",", "").rstrip(".?!\n") == "so what do you think"


@pytest.mark.parametrize("args, module, distribution", [
    (["train", "--config", "c.yaml", "--train-dir", "data", "--exp", "exp"], "torch", "torch"),
    (["decode", "exp", "data", "out"], "torch", "torch"),
    (["bpe", "train", "data", "bpe"], "subword_nmt", "subword-nmt"),
    (["w2v-train", "data", "w2v.txt"], "gensim", "gensim"),
    (["compute-cmvn", "data"], "kaldi_native_fbank", "kaldi-native-fbank"),
])
def test_a_command_without_its_extra_names_it(tmp_path: Path, args: list, module: str, distribution: str) -> None:
    """A light install (no torch, ...): the command that needs a module of the `train` extra says which, and
    how to install it, in one line (the real thing: tests/contracts/test_light_install.py)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "text").write_text("u1 so what do you think\nu2 i think so\n")
    (tmp_path / "data" / "labels").write_text("u1 COMMA O O O QUESTION\nu2 O O PERIOD\n")
    (tmp_path / "c.yaml").write_text("model: {type: drnn_lwma}\n")
    (tmp_path / "exp").mkdir()
    code = f"import sys\nsys.modules[{module!r}] = None\nfrom punctkit.cli import main\nmain()\n"
    line = one_line(run(*args, code=code, cwd=tmp_path), 1)
    assert line == (f"punctkit: error: punctkit {args[0]} needs {distribution}, which is not installed: "
                    f"pip install 'punctkit[train]'")
