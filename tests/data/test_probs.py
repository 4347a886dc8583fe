"""The Kaldi-style probs file: written rows read back, bad rows are one-line errors."""
import numpy as np
import pytest

from punctkit.data.probs import read_probs, write_probs
from punctkit.files import PunctkitError


def test_probs_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    rows = [(f"u{k}", rng.dirichlet(np.ones(4), size=n)) for k, n in enumerate((3, 1, 7))]
    write_probs(tmp_path / "probs", rows)
    got = read_probs(tmp_path / "probs", 4)
    assert list(got) == ["u0", "u1", "u2"]
    for (utt, p), (u2, q) in zip(rows, got.items()):
        assert utt == u2 and q.shape == p.shape
        assert np.allclose(q, p, atol=1e-4)


@pytest.mark.parametrize("line,what", [
    ("u1 0.5,0.5,0.0", "3 probabilities"),
    ("u1 0.5,0.6,0.0,0.0", "not a distribution"),
    ("u1 0.5,x,0.5,0.0", "not a list of probabilities"),
])
def test_bad_probs_rows_name_file_and_line(tmp_path, line, what):
    f = tmp_path / "probs"
    f.write_text("u0 1,0,0,0\n" + line + "\n")
    with pytest.raises(PunctkitError, match=rf"probs:2 \(utterance u1\): .*{what}"):
        read_probs(f, 4)
