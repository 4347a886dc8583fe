"""Write the hostile packages and checkpoints of this directory (one file per kind of attack).

Each package is tests/fixtures/legacy/word.pkt, a good package, with one member added, replaced
or its zip header altered; each must be refused with a one-line error naming that member,
before anything is written. The checkpoint carries a pickle whose `__reduce__` runs
`touch punctkit-pwned` (in the current directory) when loaded without weights_only.
Run from the repository root: `python tests/bad_inputs/packages/make_bad_packages.py`.

`outside_paths_and_yaml` writes the packages whose config, frontend description or tokenizer
config name paths outside the package (`plm.pkt` and `word.pkt` with those members changed:
they load from their own members, or are refused where a path would be read), and those whose
YAML or JSON no reader may take (a `!!python` tag, nesting thousands deep).
"""
from __future__ import annotations

import io
import json
import os
import stat
import struct
import zipfile
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
GOOD = HERE.parents[1] / "fixtures" / "legacy" / "word.pkt"
MARKER = "punctkit-pwned"


class Pwn:
    """Runs a shell command when unpickled (what weights_only=True must refuse)."""

    def __reduce__(self):  # noqa: D105
        return (os.system, (f"touch {MARKER}",))


def members(good: Path = GOOD) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(good) as z:
        return [(i, z.read(i)) for i in z.infolist()]


def write(name: str, items: list[tuple[zipfile.ZipInfo | str, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for info, data in items:
            z.writestr(info, data)
    out = HERE / name
    out.write_bytes(buf.getvalue())
    return out


def patch_sizes(path: Path, member: str, file_size: int | None = None, compress_size: int | None = None) -> None:
    """Change the sizes a member's local and central headers declare (its data stays as it is)."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for sig, csize_at, usize_at, nlen_at, name_at in ((b"PK\x03\x04", 18, 22, 26, 30), (b"PK\x01\x02", 20, 24, 28, 46)):
        pos = data.find(sig)
        while pos >= 0:
            (nlen,) = struct.unpack_from("<H", data, pos + nlen_at)
            if bytes(data[pos + name_at: pos + name_at + nlen]) == name:
                if compress_size is not None:
                    struct.pack_into("<I", data, pos + csize_at, compress_size)
                if file_size is not None:
                    struct.pack_into("<I", data, pos + usize_at, file_size)
            pos = data.find(sig, pos + 4)
    path.write_bytes(bytes(data))


def external_data_graph() -> bytes:
    """An ONNX graph whose weight is to be read from a file outside the package (/etc/hostname)."""
    from onnx import TensorProto, helper

    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "/etc/hostname"), ("offset", "0"), ("length", "4")):
        w.external_data.add(key=k, value=v)
    x = helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Add", ["tokens", "w"], ["logits"])], "g", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def changed(good: Path, new: dict[str, bytes | None]) -> list[tuple[zipfile.ZipInfo | str, bytes]]:
    """The members of `good` with those named in `new` replaced (as new members: the zip's compression),
    or left out where None."""
    return [(i.filename, new[i.filename]) if i.filename in new else (i, d) for i, d in members(good)
            if new.get(i.filename, d) is not None]


def yaml_member(good: Path, name: str, change: Callable[[dict], None]) -> bytes:
    """Member `name` (YAML) of `good`, read, changed by `change` and written again."""
    import yaml

    with zipfile.ZipFile(good) as z:
        data = yaml.safe_load(z.read(name))
    change(data)
    return yaml.safe_dump(data, sort_keys=False).encode()


def outside_paths_and_yaml() -> None:
    plm = GOOD.parent / "plm.pkt"
    outside_plm = yaml_member(plm, "config.yaml", lambda c: c["model"].update(plm="/nonexistent/punctkit-outside/bert"))
    outside_fe = yaml_member(plm, "frontend/frontend.yaml", lambda c: c.update(path="../../punctkit-outside/bert"))
    write("plm_path_outside.pkt", changed(plm, {"config.yaml": outside_plm, "frontend/frontend.yaml": outside_fe}))
    write("plm_path_outside_no_config.pkt",
          changed(plm, {"config.yaml": outside_plm, "frontend/plm/config.json": None}))
    with zipfile.ZipFile(plm) as z:
        tok = json.loads(z.read("frontend/plm/tokenizer_config.json"))
    tok.update(vocab_file="/nonexistent/punctkit-outside/vocab.txt", tokenizer_file="../../outside/tokenizer.json")
    write("tokenizer_file_outside.pkt", changed(plm, {"frontend/plm/tokenizer_config.json": json.dumps(tok).encode()}))

    def outside_vectors(c: dict) -> None:
        c["embeddings"] = {"word": "/nonexistent/punctkit-outside/glove.txt", "speech": "../../s2v.txt"}
        c["train"]["init"] = "/nonexistent/punctkit-outside/exp"
    write("embeddings_outside.pkt", changed(GOOD, {"config.yaml": yaml_member(GOOD, "config.yaml", outside_vectors)}))
    tag = f'model: !!python/object/apply:os.system ["touch {MARKER}"]\n'.encode()
    write("yaml_python_tag.pkt", changed(GOOD, {"config.yaml": tag}))
    stored = zipfile.ZIP_STORED  # a compression ratio under the limit
    write("yaml_deep.pkt", changed(GOOD, {"frontend/frontend.yaml": b"kind: " + b"[" * 5000 + b"]" * 5000}), stored)
    write("json_deep.pkt", changed(GOOD, {"punctkit.json": b"[" * 100000 + b"]" * 100000}), stored)


def main() -> None:
    good = members()
    write("traversal.pkt", good + [("frontend/../../punctkit-escaped.txt", b"escaped\n")])
    write("absolute.pkt", good + [("/tmp/punctkit-absolute.txt", b"absolute\n")])
    write("backslash.pkt", good + [("frontend\\..\\..\\punctkit-backslash.txt", b"backslash\n")])
    link = zipfile.ZipInfo("frontend/vocab.txt")
    link.create_system, link.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
    write("symlink.pkt", [(i, d) for i, d in good if i.filename != "frontend/vocab.txt"] + [(link, b"/etc/passwd")])
    write("unknown_member.pkt", good + [("frontend/hook.py", b"import os\n")])
    write("unknown_top.pkt", good + [("setup.sh", b"#!/bin/sh\n")])
    write("other_kind_member.pkt", good + [("frontend/spm.model", b"not for a word frontend")])
    import warnings

    with warnings.catch_warnings():  # zipfile warns of the duplicate it is asked to write
        warnings.simplefilter("ignore")
        write("duplicate.pkt", good + [("frontend/vocab.txt", b"<pad>\n<unk>\nevil\n")])
    write("bomb.pkt", [(i, d) for i, d in good if i.filename != "frontend/vocab.txt"]
          + [("frontend/vocab.txt", b"\n" * (16 * 2 ** 20))])
    patch_sizes(write("oversized.pkt", good), "frontend/vocab.txt", file_size=100 * 2 ** 20)
    patch_sizes(write("header_smaller.pkt", good), "frontend/vocab.txt", file_size=10)
    patch_sizes(write("header_larger.pkt", good), "frontend/vocab.txt", file_size=5000)
    total = write("total.pkt", good + [("model.onnx", b"graph")], zipfile.ZIP_STORED)
    for n in ("model.pt", "model.onnx"):
        patch_sizes(total, n, file_size=3 * 2 ** 29 - 1, compress_size=3 * 2 ** 29 - 1)
    write("onnx_external_data.pkt", good + [("model.onnx", external_data_graph())], zipfile.ZIP_STORED)
    import torch

    evil = io.BytesIO()
    torch.save({"pwn": Pwn()}, evil)
    write("code_weights.pkt", [(i, evil.getvalue() if i.filename == "model.pt" else d) for i, d in good])
    from punctkit.expdir import load_checkpoint

    state = load_checkpoint(HERE.parents[1] / "fixtures" / "legacy" / "exp" / "checkpoints" / "epoch_2.pt")
    torch.save(dict(state, note=Pwn()), HERE / "code_checkpoint.pt")
    import pickle

    with open(HERE / "code_checkpoint_raw.pt", "wb") as f:  # a plain pickle (protocol 4), not torch's zip
        pickle.dump({"model": {}, "note": Pwn()}, f, protocol=4)
    outside_paths_and_yaml()


if __name__ == "__main__":
    main()
