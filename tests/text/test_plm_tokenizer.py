"""The PLM tokenizer read from tokenizer.json with `tokenizers` alone (punctkit/text/plm_tokenizer.py)
gives transformers' ids for the same directory, writes a directory that reads back without
transformers or torch, and fails in one line on broken files."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import IWSLT
from punct_util import json_without
from punctkit.files import PunctkitError
from punctkit.text.plm import PlmFrontend, minilm_dir
from punctkit.text.plm_parts import mpnet_dir
from punctkit.text.plm_tokenizer import PieceTokenizer

transformers = pytest.importorskip("transformers", reason="the plm extra (transformers) is not installed")

# Words a recognizer or a user may write, beyond test2011's: case, accents, marks, digits, other
# scripts, emoji, ligatures, width forms, soft hyphen and zero-width space, split contractions.
ODD = ["NASA", "iPhone", "McDonald's", "naïve", "café", "ÜBER", "😀", "日本語", "—", "--", "a@b.com", "3.5",
       "U.S.", "ﬁne", "Ａｂｃ", "co\u00adop", "x\u200by", "İstanbul", "straße", "ǅemal", "'m", "n't", "'s", "'em",
       "e-mail", "#hashtag", "$5", "50%", "[laughter]", "<unk>", "[UNK]", "</s>", "\u0301a"]


def _plm_dirs() -> list[tuple[str, Path]]:
    found = []
    for name, where in (("minilm", minilm_dir), ("mpnet", mpnet_dir)):
        try:
            found.append((name, where()))
        except PunctkitError:
            pass
    return found


def _words() -> list[str]:
    """test2011's words as published (case and marks attached) and the odd ones above."""
    xml = IWSLT / "IWSLT12.TED.MT.tst2011.en-fr.en.xml"
    if not xml.is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    segs = re.findall(r"<seg[^>]*>(.*?)</seg>", xml.read_text(encoding="utf-8"))
    words = {w for seg in segs for w in seg.split()}
    return sorted(words) + ODD


@pytest.mark.parametrize("name", ["minilm", "mpnet"])
def test_ids_are_transformers_ids(name):
    """Every word's pieces (as the frontend asks: a space before it, no specials), the special tokens
    around a sequence, the vocabulary size and the pad / unk ids: as transformers' AutoTokenizer."""
    dirs = dict(_plm_dirs())
    if name not in dirs:
        pytest.skip(f"{name} is not installed here")
    d = dirs[name]
    ours = PieceTokenizer.load(d)
    theirs = transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
    words = _words()
    assert len(words) > 3000
    differ = [w for w in words if ours.ids(" " + w) != theirs(" " + w, add_special_tokens=False)["input_ids"]]
    assert differ == []
    assert ours.ids("so it goes", specials=True) == theirs("so it goes")["input_ids"]
    assert (len(ours), ours.pad_id, ours.unk_id, ours.sep_id) == (
        len(theirs), theirs.pad_token_id, theirs.unk_token_id, theirs.sep_token_id)
    assert ours.tokens(ours.ids(" unbelievable")) == theirs.convert_ids_to_tokens(
        theirs(" unbelievable", add_special_tokens=False)["input_ids"])


def test_a_learned_frontend_reads_back_without_transformers_or_torch(tmp_path):
    """`learn` writes tokenizer.json (padding and truncation of the source's file switched off);
    a fresh process that cannot import transformers or torch reads it and encodes as this one does."""
    if not _plm_dirs():
        pytest.skip("no packaged PLM installed")
    d = _plm_dirs()[0][1]
    PlmFrontend.learn([], tmp_path / "fe", path=str(d))
    (tmp_path / "fe" / "frontend.yaml").write_text(f"kind: plm\npath: {d}\n")
    saved = json.loads((tmp_path / "fe" / "plm" / "tokenizer.json").read_text(encoding="utf-8"))
    assert saved["padding"] is None and saved["truncation"] is None
    words = _words()[::7]
    want = PlmFrontend.from_path(d).encode(words[:200])
    got = json_without("from punctkit.text.frontend import load_frontend\n"
                       f"fe = load_frontend({str(tmp_path / 'fe')!r})\n"
                       f"print(json.dumps(fe.encode(json.loads({json.dumps(json.dumps(words[:200]))}))))")
    assert got == [list(want[0]), list(want[1])]


def test_broken_tokenizer_files_are_one_line_errors(tmp_path):
    """A tokenizer.json that is not one, a tokenizer_config.json that is not an object, no files:
    each a one-line error naming the file."""
    if not _plm_dirs():
        pytest.skip("no packaged PLM installed")
    src = _plm_dirs()[0][1]
    cases = {
        "truncated": {"tokenizer.json": (src / "tokenizer.json").read_text(encoding="utf-8")[:500]},
        "config": {"tokenizer.json": (src / "tokenizer.json").read_text(encoding="utf-8"),
                   "tokenizer_config.json": "[1, 2]"},
        "empty": {"README": "no tokenizer here"},
    }
    expect = {"truncated": r"tokenizer\.json: cannot read the tokenizer",
              "config": r"tokenizer_config\.json: malformed", "empty": r"no tokenizer files"}
    for case, files in cases.items():
        d = tmp_path / case
        d.mkdir()
        for f, text in files.items():
            (d / f).write_text(text, encoding="utf-8")
        with pytest.raises(PunctkitError) as e:
            PieceTokenizer.load(d)
        assert re.search(expect[case], str(e.value)) and str(d) in str(e.value) and "\n" not in str(e.value)
