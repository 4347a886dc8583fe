"""Write the hostile JSON inputs of this directory (one file per case; issue 33).

Each is read by `punctuate` (detected, or by the format its name ends in) and must give a one-line
error naming the file and line, or (deep_array.json, which is no JSON document punctkit reads) a
normal answer as plain text; tests/data/formats/test_recognizers.py says which. Deep files nest 5000 levels:
json itself overflows the stack near 1000, punctkit refuses more than 100 (files.MAX_JSON_DEPTH).
Run from the repository root: `python tests/bad_inputs/json/make_bad_json.py`.
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEEP = "[" * 5000 + "]" * 5000
GOOD = json.dumps({"id": "u1", "text": "so i think we should go"})


def main() -> None:
    """Write the files."""
    files = {
        "deep_text.jsonl": f'{GOOD}\n{{"id": "u2", "text": {DEEP}}}\n',
        "deep_array.json": "[" * 5000 + "\n",
        "deep_whisper.json": '{"segments": [{"text": " so", "words": [{"word": " so", "start": 0, "end": 1}]}],\n'
                             f' "extra": {DEEP}}}\n',
        "deep_vosk.json": json.dumps({"result": [{"word": "so", "start": 0, "end": 1, "conf": 1}], "text": "so"})
                          + f'\n{{"text": "we go", "alternatives": {DEEP}}}\n',
        "deep_nemo.json": json.dumps({"audio_filepath": "a.wav", "pred_text": "so"}) + "\n"
                          + f'{{"audio_filepath": "b.wav", "pred_text": "go", "meta": {DEEP}}}\n',
        "long_number.jsonl": f'{GOOD}\n{{"id": {"9" * 5000}, "text": "so"}}\n',
        "lone_surrogate.jsonl": f'{GOOD}\n{{"id": "u2", "text": "caf\\ud800 ok"}}\n',
        "nemo_pred_text_null.json": '{"audio_filepath": "a.wav", "pred_text": null}\n',
    }
    for name, text in files.items():
        (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
