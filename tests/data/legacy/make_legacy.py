"""Write the files in this directory with the punctkit of the commit that ran it.

They were made with the code from before packages were read by validated names and
checkpoints loaded with weights_only=True, so that tests check that older model
files still load. Run from the repository root: `python tests/data/legacy/make_legacy.py`.
Only the files listed at the end are kept; the scratch directory is removed.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/

from legacy_util import prepare_data, write_corpus  # noqa: E402
from punct_util import tiny_conf  # noqa: E402
from punctkit import load_model  # noqa: E402
from punctkit.fit import train  # noqa: E402
from punctkit.packing import pack  # noqa: E402

TAGGER = {"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32}


def tiny_bert(d: Path, words: list[str]) -> Path:
    """A 1-layer BERT with a word-level vocabulary of the corpus (random weights)."""
    import torch
    import transformers

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64)).save_pretrained(str(d))
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (d / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": true}')
    return d


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="legacy-"))
    prepare_data(tmp)
    words = sorted({ln.split("\t")[0] for ln in (tmp / "train.twocol").read_text().splitlines()})
    frontends = {"word": {"kind": "word", "min_count": 1},
                 "subword_nmt": {"kind": "subword_nmt", "merges": 40, "min_frequency": 2},
                 "sentencepiece": {"kind": "sentencepiece", "vocab_size": 60, "model_type": "unigram"},
                 "plm": {"kind": "plm", "path": str(tiny_bert(tmp / "bert", words))}}
    text = " ".join(ln.split("\t")[0] for ln in write_corpus(tmp / "test.twocol", 200, seed=2).read_text().splitlines())
    (HERE / "input.txt").write_text(text + "\n")
    for name, fe in frontends.items():
        conf = tiny_conf(TAGGER if name != "plm" else {"type": "plm_tagger", "plm": fe["path"]}, epochs=2)
        conf["frontend"] = fe
        train(conf, tmp / "train", tmp / "valid", tmp / name, quiet=True)
        pack(tmp / name, HERE / f"{name}.pkt")
        (HERE / f"{name}.expected.txt").write_text(load_model(HERE / f"{name}.pkt").punctuate(text) + "\n")
    pack(tmp / "word", HERE / "word_onnx.pkt", onnx=True)
    exp = HERE / "exp"
    shutil.rmtree(exp, ignore_errors=True)
    exp.mkdir()
    for f in ("config.yaml", "history.json", "inventory", "model.avg.pt", "checkpoints/epoch_2.pt"):
        (exp / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp / "word" / f, exp / f)
    shutil.copytree(tmp / "word" / "frontend", exp / "frontend")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
