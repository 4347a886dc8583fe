"""`read_timing` moved to data/timing.py (the readers below feats/ read a data directory's turns and pauses too);
named here still for the callers that import it from here."""
from punctkit.data.timing import read_timing  # noqa: F401 (re-exported)
