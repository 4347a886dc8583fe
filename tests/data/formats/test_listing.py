"""`punctkit formats`: every format of the registry, what it is, whether punctuate reads or writes it, and how
it is detected, which is what the detector does (detect.detection)."""
from __future__ import annotations

import pytest

from punctkit.data.formats.detect import detect_format, detection
from punctkit.data.formats.json_shapes import KIND_KEYS
from punctkit.data.formats.registry import REGISTRY, punctuate_outputs
from tests.punct_util import cli


def entries(out: str) -> dict[str, list[str]]:
    """The listing's entries: name -> its lines (roles, summary, detection)."""
    got: dict[str, list[str]] = {}
    name = None
    for line in out.splitlines():
        if line and not line.startswith(" ") and line.split(":")[0] in REGISTRY:
            name = line.split(":")[0]
            got[name] = [line.split(": ", 1)[1] if ": " in line else ""]
        elif name is not None and line.startswith("  "):
            got[name].append(line.strip())
    return got


def test_formats_lists_every_format_with_its_roles_and_detection():
    listed = entries(cli("formats").stdout)
    assert list(listed) == list(REGISTRY)
    for name, (roles, summary, told) in listed.items():
        f = REGISTRY[name]
        assert summary == f.summary
        assert ("punctuate reads" in roles) == (f.units is not None), name
        assert ("writes" in roles.split(";")[0] and roles.startswith("punctuate")) == (name in punctuate_outputs())
        if f.units is not None or f.reader is not None:  # read: how it is told, never blank
            assert told == f"detected: {detection(name)}" and len(detection(name)) > 10, name
        else:
            assert told == "an output: never read", name
    assert listed["ctm"][0] == "punctuate reads and writes" and listed["rev"][0] == "punctuate reads"
    assert listed["datadir"][0] == "punctuate writes; convert reads and writes"
    assert listed["readable"][0] == "punctuate writes"


SAMPLES = {
    "ctm": "u1 1 0.00 0.30 so\nu1 1 0.30 0.20 what\n",
    "stm": "talk 1 spk1 0.00 1.50 so what do you think\ntalk 1 spk1 1.50 3.00 i met jane\n",
    "twocol": "so\tO\nwhat\tQUESTION\n",
    "punctuator2": "so what ?QUESTIONMARK do you think .PERIOD\nhello ,COMMA there .PERIOD\n",
    "trn": "so what do you think (spk1-utt1)\ni met jane (spk1-utt2)\n",
    "nlp": "token|speaker|ts|endTs|punctuation|case|tags|wer_tags\nso|1|0.0|0.3||LC|[]|[]\n",
    "srt": "1\n00:00:00,000 --> 00:00:01,500\nso what do you think\n",
    "vtt": "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nso what do you think\n",
    "whisper-tsv": "start\tend\ttext\n0\t1500\tso what do you think\n",
    "kaldi_text": "utt1 so what do you think\nutt2 i met jane in new york\n",
    "text": "so what do you think\ni met jane in new york\n",
    "jsonl": '{"id": "u1", "text": "so what"}\n{"id": "u2", "text": "i met jane"}\n',
    **{kind: f'{{"{keys[0]}": []}}\n' for kind, keys in KIND_KEYS.items()},
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_what_the_listing_says_is_what_the_detector_does(name, tmp_path):
    """A small file of each kind the listing describes is detected as that format, and the listing names it."""
    src = tmp_path / "in.data"
    src.write_text(SAMPLES[name], encoding="utf-8")
    assert detect_format(src) == name
    told = detection(name)
    if name in KIND_KEYS:  # a JSON format: the key that told it is named
        assert f"`{KIND_KEYS[name][0]}`" in told
