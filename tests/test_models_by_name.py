"""Shipped models by name (`-m fast`), `punctkit models`, and initials as a class of words."""
from __future__ import annotations

import pytest

from punctkit.files import PunctkitError
from punctkit.pretrained import SHIPPED, default_model, model_path
from tests.punct_util import cli


def test_a_shipped_models_name_is_its_package_and_an_unknown_name_one_line(tmp_path):
    assert model_path("fast") == default_model() and list(SHIPPED)[0] == "fast"
    with pytest.raises(PunctkitError, match=r"^unknown model 'accurate': not a shipped model \(fast\)"):
        model_path("accurate")
    own = tmp_path / "fast"  # a file of that name is the user's file
    own.write_bytes(b"x")
    assert model_path(own) == own
    r = cli("punctuate", "-m", "accurate", ok=False)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "(fast)" in r.stderr
    r = cli("models")
    assert r.stdout.startswith("fast (default): ") and "licence" in r.stdout and "test_cased: punctuation F1" in r.stdout


def test_punctuate_and_the_api_take_the_name(tmp_path):
    from punctkit import Punctuator

    src = tmp_path / "x.txt"
    src.write_text("the analyst at j.p. morgan asked about the q&a and the m&a plans\n")
    named = cli("punctuate", "-m", "fast", src).stdout
    assert named == cli("punctuate", src).stdout
    assert "J.P." in named and "Q&A" in named and "M&A" in named
    assert Punctuator.load("fast").card == Punctuator.load().card


def test_initials_are_a_class():
    from punctkit.data.labels import apply_case

    assert [apply_case(w, "capital") for w in ("j.p.", "u.k.", "q&a", "at&t")] == ["J.P.", "U.K.", "Q&A", "AT&T"]
    assert [apply_case(w, "lower") for w in ("i.e.", "e.g.", "p&l", "r&d")] == ["i.e.", "e.g.", "P&L", "R&D"]
    assert apply_case("e-mail", "capital") == "E-mail" and apply_case("rock&roll", "lower") == "rock&roll"
