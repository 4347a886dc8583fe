"""Kaldi job splitting (`--nj N --job J --merge`), written once for extract-feats, align and recognize.

`--nj N` cuts a data directory's utterances into N consecutive parts of near-equal
size (Kaldi's split_scp.pl: the first ones one longer); `--job J` runs part J
only and leaves its files, named `NAME.J[.EXT]` (Kaldi's `JOB`), beside the
output; `--merge` joins parts 1..N into the output once every part has finished,
refusing a missing part. Without --job every part runs in turn, then the merge.
The merged output is written atomically by the command (it alone knows its format).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar

from punctkit.data.datadir import split_balanced
from punctkit.files import PunctkitError

T = TypeVar("T")

PartFiles = Callable[[int], tuple[Path, ...]]  # job J -> the files part J leaves


def job_error(nj: int, job: int | None) -> tuple[str, str] | None:
    """(the option at fault, a one-line message) for `--nj NJ --job JOB`, or None when they are fine."""
    if nj < 1:
        return "--nj", f"--nj must be at least 1, got {nj}"
    if job is not None and not 1 <= job <= nj:
        return "--job", f"--job {job} is outside 1..{nj}"
    return None


def check_jobs(nj: int, job: int | None) -> None:
    """--nj at least 1 and --job one of its parts, or a one-line PunctkitError."""
    err = job_error(nj, job)
    if err is not None:
        raise PunctkitError(err[1])


def jobs_to_run(nj: int, job: int | None) -> list[int]:
    """The parts this run computes: JOB alone, or all of 1..NJ."""
    check_jobs(nj, job)
    return [job] if job is not None else list(range(1, nj + 1))


def split_parts(items: Sequence[T], nj: int) -> list[list[T]]:
    """`items` (utterance ids, in DATA's order) cut into `nj` consecutive parts of near-equal size
    (Kaldi's split_scp.pl); with fewer items than parts, the last parts are empty."""
    check_jobs(nj, None)
    return [[items[i] for i in group] for group in split_balanced([1] * len(items), nj)]


def part_key(items: Sequence[str]) -> str:
    """`first..last (n)` of a part's utterances: what its job records, checked at the merge."""
    return f"{items[0]}..{items[-1]} ({len(items)})" if items else "(0)"


def part_path(base: str | Path, job: int, ext: str = "") -> Path:
    """The file of part `job` named after `base`: `BASE.JOB` + `ext` (`raw_fbank.2.ark`, `align_ctm.2`)."""
    base = Path(base)
    return base.parent / f"{base.name}.{job}{ext}"


def part_files(base: str | Path, *exts: str) -> PartFiles:
    """job J -> (`BASE.J` + ext for each of `exts`): the files one part leaves."""
    return lambda j: tuple(part_path(base, j, e) for e in exts)


def finished_parts(nj: int, files: PartFiles) -> Iterator[tuple[Path, ...]]:
    """The files of parts 1..nj, in order, for the merge (which writes nothing before the last
    one is read); a part with a file missing is a one-line error naming the file (`did job J of
    NJ finish?`), raised when the merge reaches that part."""
    check_jobs(nj, None)
    for j in range(1, nj + 1):
        paths = files(j)
        for p in paths:
            if not p.is_file():
                raise PunctkitError(f"{p}: missing (did job {j} of {nj} finish?)")
        yield paths


def check_part_record(path: Path, job: int, nj: int, recorded_nj: int, recorded_key: str,
                      part: Sequence[str], data: str | Path) -> None:
    """What job `job` recorded in `path` (its --nj and part_key) against part `job` of DATA now: a part
    computed with another --nj, or over other utterances, is a one-line error (run the job again)."""
    if recorded_nj != nj:
        raise PunctkitError(f"{path}: written by a run with --nj {recorded_nj}, not {nj}")
    if recorded_key != part_key(part):
        raise PunctkitError(f"{path}: job {job} ran over utterances {recorded_key}, but part {job} of {data} is "
                            f"now {part_key(part)}; run job {job} again")
