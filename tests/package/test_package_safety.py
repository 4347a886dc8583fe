"""Packages are read, not trusted.

Hostile zips (tests/bad_inputs/packages, written by make_bad_packages.py from a good
package) are refused with a one-line error naming the package and the member, and
nothing is written anywhere; packages written before the change still load and
punctuate as they did; `pack` writes only what `read_package` accepts.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_util import LEGACY
from punctkit.archive import GiB, MiB
from punctkit.files import PunctkitError
from punctkit.package import FRONTEND_FILES, allowed_members, check_entries, read_package, unsafe_name

BAD = Path(__file__).resolve().parents[1] / "bad_inputs" / "packages"
ROOT = Path(__file__).resolve().parents[2]

# file: (the member it must name, a phrase of the reason)
HOSTILE = {
    "traversal.pkt": ("frontend/../../punctkit-escaped.txt", "'..' in its path"),
    "absolute.pkt": ("/tmp/punctkit-absolute.txt", "absolute path"),
    "backslash.pkt": ("frontend\\..\\..\\punctkit-backslash.txt", "backslash"),
    "symlink.pkt": ("frontend/vocab.txt", "symbolic link"),
    "unknown_member.pkt": ("frontend/hook.py", "not a file of a punctkit package"),
    "other_kind_member.pkt": ("frontend/spm.model", "not a file of a 'word' frontend"),
    "unknown_top.pkt": ("setup.sh", "not a file of a punctkit package"),
    "duplicate.pkt": ("frontend/vocab.txt", "duplicate name"),
    "bomb.pkt": ("frontend/vocab.txt", "compression ratio"),
    "oversized.pkt": ("frontend/vocab.txt", "declares 104857600 bytes, over the limit"),
    "header_smaller.pkt": ("frontend/vocab.txt", "does not match its header"),
    "header_larger.pkt": ("frontend/vocab.txt", "not the 5000 its header declares"),
    "total.pkt": ("model.onnx", "total over"),
}


def files_under(d: Path) -> set[Path]:
    return {p for p in d.rglob("*")}


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """tmp_path/tmp as the temporary root and tmp_path/cwd as the working directory."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_package_is_refused_naming_the_member_and_writes_nothing(name, sandbox):
    from punctkit import load_model

    pkg = sandbox / "cwd" / "m" / name
    pkg.parent.mkdir()
    shutil.copyfile(BAD / name, pkg)
    before = files_under(sandbox)
    member, why = HOSTILE[name]
    with pytest.raises(PunctkitError) as e:
        load_model(pkg)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{pkg}: ") and repr(member) in msg and why in msg
    assert files_under(sandbox) == before  # nothing escaped, the private temporary directory is gone


def test_hostile_package_via_the_command_is_one_line_and_writes_nothing(tmp_path):
    """`punctkit punctuate -m traversal.pkt`: exit 1, one line, no output file, nothing beside the temp dir."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "in.txt").write_text("the cat sees a dog\n")
    before = files_under(tmp_path)
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-m", BAD / "traversal.pkt",
                        tmp_path / "in.txt", "-o", tmp_path / "out.txt"], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("punctkit: error: ") and "'frontend/../../punctkit-escaped.txt'" in r.stderr
    assert files_under(tmp_path) == before


def test_weights_that_need_code_are_refused(sandbox):
    """model.pt is unpickled with weights_only=True: a pickle calling os.system is a one-line error."""
    from punctkit import load_model

    with pytest.raises(PunctkitError, match=r"\(model\.pt\): not a plain-data checkpoint \(needs GLOBAL ") as e:
        load_model(BAD / "code_weights.pkt", backend="torch")
    assert "\n" not in str(e.value)
    assert not (sandbox / "cwd" / "punctkit-pwned").exists()


def test_onnx_graph_reading_files_outside_the_package_is_refused(tmp_path):
    """model.onnx whose weights live in an external file (/etc/hostname): onnxruntime, given the graph as
    bytes, reads no file; `punctuate --backend onnx` says so in one line."""
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    (tmp_path / "in.txt").write_text("the cat sees a dog\n")
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-m", BAD / "onnx_external_data.pkt",
                        "--backend", "onnx", tmp_path / "in.txt"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "(model.onnx): does not load in onnxruntime" in r.stderr


@pytest.mark.parametrize("kind", ["word", "subword_nmt", "sentencepiece", "plm", "word_onnx"])
def test_legacy_packages_load_and_punctuate_as_when_packed(kind):
    """Packages written by an older punctkit (tests/fixtures/legacy/make_legacy.py) give the
    text they gave then; the words pass through."""
    from punctkit import load_model

    backend = "onnx" if kind == "word_onnx" else "torch"
    if kind == "plm":
        pytest.importorskip("transformers", reason="the plm extra is not installed")
    if backend == "onnx":
        pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    text = (LEGACY / "input.txt").read_text().strip()
    got = load_model(LEGACY / f"{kind}.pkt", backend=backend, threads=1).punctuate(text)
    assert got == (LEGACY / f"{kind.removesuffix('_onnx')}.expected.txt").read_text().rstrip("\n")
    assert [w.strip(",.?").lower() for w in got.split()] == text.split()


def corrupt_weights_copy(src: Path, dst: Path) -> None:
    """A copy of `src` with 64 bytes of model.pt's stored data flipped in place: its header (size,
    CRC-32) is as before, so only reading the member tells."""
    shutil.copy(src, dst)
    with zipfile.ZipFile(dst) as z:
        info = z.getinfo("model.pt")
        assert info.compress_type == zipfile.ZIP_STORED
    raw = bytearray(dst.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + int.from_bytes(
        raw[info.header_offset + 28:info.header_offset + 30], "little") + 100  # local header, name, extra
    raw[start:start + 64] = bytes(b ^ 0xFF for b in raw[start:start + 64])
    dst.write_bytes(bytes(raw))


def test_model_pt_is_read_only_by_the_torch_backend_and_checked_then(tmp_path):
    """An ONNX package is punctuated without reading model.pt (its 17 MB of frozen vectors in the
    IWSLT package); the torch backend reads it, and a model.pt whose bytes no longer match its CRC,
    or a package replaced after it was opened, is a one-line error naming the member."""
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from punctkit import load_model

    bad = tmp_path / "bad_weights.pkt"
    corrupt_weights_copy(LEGACY / "word_onnx.pkt", bad)
    text = (LEGACY / "input.txt").read_text().strip()
    got = load_model(bad, backend="onnx", threads=1).punctuate(text)
    assert got == (LEGACY / "word.expected.txt").read_text().rstrip("\n")
    with pytest.raises(PunctkitError, match=r"bad_weights\.pkt: .*model\.pt.*does not match its header") as e:
        load_model(bad, backend="torch", threads=1)
    assert "\n" not in str(e.value)
    moved = tmp_path / "moved.pkt"
    shutil.copy(LEGACY / "word_onnx.pkt", moved)
    pkg = read_package(moved)
    shutil.copy(LEGACY / "word.pkt", moved)  # another package under the same name
    with pytest.raises(PunctkitError, match=r"moved\.pkt: changed since it was opened \(model\.pt\)"):
        pkg.weights


def test_pack_writes_only_the_members_read_package_accepts(tmp_path):
    """Stray files in a model's frontend dir (editor backups, notes) are not packed; the package loads."""
    from punctkit.packing import pack

    exp = tmp_path / "exp"
    shutil.copytree(LEGACY / "exp", exp)
    (exp / "frontend" / "vocab.txt~").write_text("backup\n")
    (exp / "frontend" / "notes").mkdir()
    (exp / "frontend" / "notes" / "todo.md").write_text("x\n")
    pack(exp, tmp_path / "m.pkt")
    with zipfile.ZipFile(tmp_path / "m.pkt") as z:
        names = z.namelist()
    assert set(names) <= set(allowed_members("word")) and "frontend/vocab.txt" in names
    assert read_package(tmp_path / "m.pkt").frontend.vocab_size == 71


def test_a_rezipped_package_still_loads(tmp_path):
    """A package unzipped and zipped again (directory entries, every member deflated) is still accepted."""
    from punctkit import load_model

    src = tmp_path / "unpacked"
    with zipfile.ZipFile(LEGACY / "word.pkt") as z:
        z.extractall(src)  # trusted: our own legacy file
    shutil.make_archive(str(tmp_path / "rezipped"), "zip", src)
    with zipfile.ZipFile(tmp_path / "rezipped.zip") as z:
        assert "frontend/" in z.namelist()
    text = (LEGACY / "input.txt").read_text().strip()
    got = load_model(tmp_path / "rezipped.zip", threads=1).punctuate(text)
    assert got == (LEGACY / "word.expected.txt").read_text().rstrip("\n")


def test_a_plm_package_without_its_tokenizer_does_not_reach_outside(tmp_path):
    """A plm package stripped of frontend/plm/ would load the tokenizer named by its frontend.yaml path."""
    with zipfile.ZipFile(LEGACY / "plm.pkt") as z, zipfile.ZipFile(tmp_path / "bare.pkt", "w") as out:
        for i in z.infolist():
            if not i.filename.startswith("frontend/plm/"):
                out.writestr(i, z.read(i))
    with pytest.raises(PunctkitError, match=r"bare\.pkt: incomplete packed model \(no frontend/plm/ tokenizer files\)"):
        read_package(tmp_path / "bare.pkt")


# packages naming paths outside themselves (make_bad_packages.py: outside_paths_and_yaml); none exists,
# so reading one would fail: they load from their own members and punctuate as the package they came from
OUTSIDE_LOADS = {"plm_path_outside.pkt": "plm", "tokenizer_file_outside.pkt": "plm", "embeddings_outside.pkt": "word"}
# file: what its one-line error says (after the package's name)
REFUSED = {
    "plm_path_outside_no_config.pkt": ": config.yaml: model plm '/nonexistent/punctkit-outside/bert' names an "
                                      "encoder outside the package, which holds no frontend/plm/config.json",
    "yaml_python_tag.pkt": " (config.yaml): not valid YAML at line 1, column 8 (could not determine a constructor "
                           "for the tag 'tag:yaml.org,2002:python/object/apply:os.system')",
    "yaml_deep.pkt": " (frontend/frontend.yaml): not valid YAML at line 1, column 106 "
                     "(nested more than 100 levels deep)",
    "json_deep.pkt": ": corrupt packed model (punctkit.json is not JSON)",
}


@pytest.mark.parametrize("name", sorted(OUTSIDE_LOADS))
def test_paths_a_package_names_are_never_read(name, sandbox):
    """A model `plm:` path, a frontend `path:`, a tokenizer's `vocab_file`/`tokenizer_file`, embedding and
    warm-start paths: the package's members are used instead, and nothing is written."""
    from punctkit import load_model

    kind = OUTSIDE_LOADS[name]
    if kind == "plm":
        pytest.importorskip("transformers", reason="the plm extra is not installed")
    before = files_under(sandbox)
    text = (LEGACY / "input.txt").read_text().strip()
    got = load_model(BAD / name, backend="torch", threads=1).punctuate(text)
    assert got == (LEGACY / f"{kind}.expected.txt").read_text().rstrip("\n")
    assert files_under(sandbox) == before


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_outside_encoders_and_unreadable_yaml_or_json_are_one_line(name, sandbox):
    """An encoder path with no config of its own to use instead, a `!!python` tag (which runs nothing),
    YAML nested 5000 deep and JSON nested 100000 deep are refused in one line naming the member."""
    from punctkit import load_model

    if name.startswith("plm"):
        pytest.importorskip("transformers", reason="the plm extra is not installed")
    before = files_under(sandbox)
    with pytest.raises(PunctkitError) as e:
        load_model(BAD / name, backend="torch", threads=1)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{BAD / name}{REFUSED[name]}"), str(e.value)
    assert files_under(sandbox) == before and not (sandbox / "cwd" / "punctkit-pwned").exists()


def test_a_tokenizer_config_loses_the_file_paths_older_transformers_would_read():
    """transformers 4 lets `vocab_file`/`tokenizer_file` in tokenizer_config.json win over the files beside it."""
    from punctkit.package import local_files_only

    conf = {"tokenizer_class": "BertTokenizer", "vocab_file": "/etc/passwd", "tokenizer_file": "../t.json",
            "do_lower_case": True}
    assert json.loads(local_files_only(json.dumps(conf).encode())) == {"tokenizer_class": "BertTokenizer",
                                                                       "do_lower_case": True}
    for same in (json.dumps({"do_lower_case": True}).encode(), b"[1]", b"not json", b"[" * 100000):
        assert local_files_only(same) == same


def _info(name: str, size: int, compressed: int | None = None) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.file_size, info.compress_size = size, size if compressed is None else compressed
    return info


def test_limits_admit_the_largest_model_we_ship():
    """MPNet-base with its ONNX copy (about 0.45 GB each) and a large tokenizer pass; the limits bite above."""
    p = Path("mpnet.pkt")
    ship = [_info("punctkit.json", 2000, 900), _info("config.yaml", 6000, 2000),
            _info("frontend/frontend.yaml", 200, 150), _info("frontend/plm/tokenizer.json", 711_000, 180_000),
            _info("frontend/plm/vocab.txt", 232_000, 108_000), _info("frontend/plm/config.json", 600, 350),
            _info("model.pt", 1_300 * MiB), _info("model.onnx", 1_300 * MiB)]
    check_entries(p, ship)
    with pytest.raises(PunctkitError, match="'model.pt' refused: declares"):
        check_entries(p, [_info("model.pt", 2 * GiB)])
    with pytest.raises(PunctkitError, match="'frontend/vocab.txt' refused: compression ratio"):
        check_entries(p, [_info("frontend/vocab.txt", 10 * MiB, 10 * MiB // 500)])


def test_every_frontend_kind_has_an_allowlist():
    """A frontend kind registered without its list of files would make its packages unreadable."""
    import importlib

    from punctkit.text.frontend import FRONTENDS

    importlib.import_module("punctkit.text.plm")  # registers the kind living outside frontend.py
    assert set(FRONTENDS) <= set(FRONTEND_FILES)
    with pytest.raises(PunctkitError, match="unknown frontend kind 'nope'"):
        allowed_members("nope")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["frontend", "plm", "..", ".", "", "a", "/", "\\", "C:", "\n", "vocab.txt"]),
                min_size=1, max_size=6).map("/".join) | st.text(max_size=40))
def test_accepted_names_stay_inside_the_directory_and_errors_are_one_line(name):
    """Any name `unsafe_name` accepts joins under a directory without leaving it; any refusal is one line."""
    if unsafe_name(name) is None:
        base = "/base/dir"
        joined = os.path.normpath(os.path.join(base, *name.rstrip("/").split("/")))
        assert joined.startswith(base + "/")
    try:
        check_entries(Path("x.pkt"), [_info(name, 10)])
    except PunctkitError as e:
        assert "\n" not in str(e) and "\r" not in str(e)
