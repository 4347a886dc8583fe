"""The Python API in one line (punctkit/api.py, docs/api.md): `punctkit.load(model)` and its `Model`, the names
`punctkit` exports lazily, `Engine.label` on plain strings with an id per unit, and docs/api.md's examples, run
as written."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import punctkit
from punctkit.files import PunctkitError

ROOT = Path(__file__).resolve().parents[1]
API_DOC = ROOT / "docs" / "api.md"
TEXT = "so what do you think nasa will do next i met jane in new york last week"


@pytest.fixture(scope="module")
def model():
    return punctkit.load()


def examples(text: str) -> list[tuple[str, str | None]]:
    """(code, the output shown under it or None) of every ```python block of a Markdown page."""
    found = re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)
    blocks = [(m.group(1), m.group(2)) for m in found]
    return [(body, blocks[k + 1][1] if k + 1 < len(blocks) and blocks[k + 1][0] == "output" else None)
            for k, (lang, body) in enumerate(blocks) if lang == "python"]


def test_the_example_reader_pairs_code_with_its_output():
    page = "a\n```python\nprint(1)\n```\n\n```output\n1\n```\n```python\nx = 2\n```\n```bash\nls\n```\n"
    assert examples(page) == [("print(1)\n", "1\n"), ("x = 2\n", None)]


@pytest.mark.parametrize("k", range(len(examples(API_DOC.read_text(encoding="utf-8")))))
def test_every_example_of_the_api_page_prints_what_it_shows(k, tmp_path):
    code, shown = examples(API_DOC.read_text(encoding="utf-8"))[k]
    assert shown is not None, f"docs/api.md example {k + 1} shows no ```output block"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == shown, f"docs/api.md example {k + 1}:\n{code}\nshows:\n{shown}\nprinted:\n{r.stdout}"


def test_the_page_has_an_example_for_each_call():
    code = "\n".join(c for c, _ in examples(API_DOC.read_text(encoding="utf-8")))
    for call in ("punctkit.load(", ".punctuate(", ".label(", "probs=True", ".times", ".label_file(", ".stream(",
                 ".feed(", ".finish()"):
        assert call in code, call


def test_import_is_light_and_the_names_are_listed():
    r = subprocess.run([sys.executable, "-c", "import sys, json, punctkit\nbefore = set(sys.modules)\n"
                        "names = dir(punctkit)\nfrom punctkit import PunctStream, load, Model, Labelled\n"
                        "print(json.dumps({'heavy': sorted(m for m in before if m.split('.')[0] in "
                        "('numpy', 'onnxruntime', 'torch') or m.startswith('punctkit.')), 'dir': names, "
                        "'all': punctkit.__all__, 'stream': PunctStream.__module__, 'model': Model.__module__}))"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["heavy"] == []
    for name in ("load", "Model", "PunctStream", "Engine", "Ensemble", "Labelled", "load_model"):
        assert name in got["dir"] and name in got["all"]
    assert got["stream"] == "punctkit.infer.stream" and got["model"] == "punctkit.api"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        punctkit.nothing  # noqa: B018


def test_a_text_gives_a_text_and_texts_give_texts_as_the_engine_punctuates_them(model):
    docs = [TEXT, "thanks for coming\nso what do you think\n", "", "one line\n\nafter a blank one", "ok"]
    want = [model.engine.punctuate(d) + ("\n" if d.endswith("\n") else "") for d in docs]
    assert model.punctuate(docs) == want
    assert model.punctuate(iter(docs)) == want  # any iterable: each its own document
    assert [model.punctuate(d) for d in docs] == want
    assert want[1].count("\n") == 2 and want[3].split("\n")[1] == "" and want[2] == ""
    for d, out in zip(docs, want):  # words pass through
        assert [w.strip(",.?!").lower() for w in out.split()] == d.split()
    assert model.punctuate([]) == []


def test_a_list_of_texts_is_decoded_in_batches_as_documents(model, tmp_path):
    """A file's lines through the API: each line its own document, as `punctuate` reads a Kaldi text's
    utterances (each starting and ending sentences)."""
    lines = ["so what do you think", "i met jane in new york", "thanks for coming"]
    src = tmp_path / "lines.txt"
    src.write_text("\n".join(lines) + "\n")
    with open(src, encoding="utf-8") as f:
        got = model.punctuate(f)
    assert [g.rstrip("\n") for g in got] == [model.punctuate(ln) for ln in lines]
    assert all(g.endswith("\n") and g[0].isupper() and g.rstrip()[-1] in ".?!" for g in got)


def test_not_a_text_is_one_line(model):
    with pytest.raises(PunctkitError, match=r"^punctuate takes a text or texts \(str\); text 2 is a int$"):
        model.punctuate(["so what", 3])
    with pytest.raises(PunctkitError, match=r"^unknown model 'precise': not a shipped model"):
        punctkit.load("precise")


def test_label_takes_a_plain_string_and_gives_every_unit_its_own_id(model):
    one = model.label(TEXT, probs=True)
    assert one.words == TEXT.split() and one.text == model.punctuate(TEXT) and one.utt.uttid == "s0"
    many = model.label([TEXT, ["thanks", "for", "coming"], "see you soon"])
    assert [d.utt.uttid for d in many] == ["s0", "s1", "s2"]
    assert many[0].labels == one.labels and many[1].text == "Thanks for coming."
    # the engine itself: a string alone is one unit, lists of words each their own id
    engine = model.engine
    (alone,) = engine.label("so what do you think")
    assert alone.words == ["so", "what", "do", "you", "think"] and alone.shown[-1] == "think?"
    ids = [d.utt.uttid for d in engine.label([["a", "b"], ["c"], ["d", "e"]])]
    assert len(set(ids)) == 3
    ids = [d.utt.uttid for d in engine.label([["so", "what"], ["ok", "then"]], one_stream=True)]
    assert len(set(ids)) == 2


def test_probabilities_are_a_dict_per_word_over_the_models_labels(model):
    plain = model.label(TEXT)
    assert plain.probabilities is None and plain.rows is None
    done = model.label(TEXT, probs=True)
    assert done.labels == plain.labels and len(done.probabilities) == len(TEXT.split())
    for p, lab in zip(done.probabilities, done.labels):
        assert list(p) == list(model.labels) and abs(sum(p.values()) - 1) < 1e-5 and lab in p
    # inside the text each word's label is its most probable one (the stream's end may close the last)
    assert [max(p, key=p.get) for p in done.probabilities[:-1]] == done.labels[:-1]


def test_times_are_the_inputs(model, tmp_path):
    ctm = tmp_path / "a.ctm"
    ctm.write_text("u1 1 0.50 0.20 so\nu1 1 0.70 0.30 what\nu2 1 3.00 0.25 thanks\n")
    got = list(model.label_file(ctm))
    assert [d.utt.uttid for d in got] == ["u1", "u2"]
    assert got[0].times == [(0.5, 0.7), (0.7, 1.0)] and got[1].times == [(3.0, 3.25)]
    assert got[0].text == "So what?" or got[0].text.startswith("So what")
    assert model.label("so what").times == [(None, None), (None, None)]
    bad = tmp_path / "bad.ctm"
    bad.write_text("u1 1 0.50 0.20 so\n")
    with pytest.raises(PunctkitError, match="input format 'xml'"):
        list(model.label_file(bad, input_format="xml"))


def test_the_stream_commits_what_punctuate_shows(model):
    stream = model.stream()
    words = TEXT.split()
    got = [c for k in range(0, len(words), 3) for c in stream.feed(words[k:k + 3])] + stream.finish()
    assert " ".join(c.shown for c in got) == model.punctuate(TEXT)
    assert [c.word for c in got] == words and got[0] == (got[0].word, got[0].label, got[0].shown)
    assert isinstance(stream, punctkit.PunctStream)


def test_options_and_ensembles(model, tmp_path):
    kept = punctkit.load(keep_input_marks=True)
    assert kept.punctuate("so, what do you think.").endswith("think.")
    lower = punctkit.load(capitalize=False).punctuate("so what do you think")
    assert lower == lower.lower() and lower[-1] in ".?!"  # marks, no capitals
    assert [w.strip(",.?!;:") for w in lower.split()] == "so what do you think".split()
    both = punctkit.load(["fast", "fast"], weights=[0.5, 0.5])
    assert type(both.engine.scorer).__name__ == "Ensemble" and len(both.engine.scorer.members) == 2
    assert both.punctuate(TEXT) == model.punctuate(TEXT)  # a model averaged with itself
    assert model.card["model"] == "drnn_lwma"
