"""Multi-process training (DDP): `--ngpu N` (one process per GPU, nccl) or `--nproc N` (CPU
processes, gloo), spawned here, or a torchrun group joined (`ddp_process`).

The model is wrapped only in `wrap_ddp` (the data is split only in `data.streams.shard`).

A spawned process that fails sends its exception itself: a plain JSON record (rank, time,
the exception's type name, its message, whether it is a `PunctkitError`, and the formatted
traceback) written whole into a temporary directory of the launcher's. The launcher raises
a `PunctkitError` with the child's message for a user error (the earliest, where several
processes report one), else a `TrainProcessError` naming the rank and the exception that
came first (a peer of a failed process often fails next, in a collective); the child's
traceback is the `__cause__` of either (shown under `--debug`). Nothing executable travels
and no traceback text is parsed. A process that reported nothing (killed by a signal, say)
leaves torch's own exception to be raised.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, NoReturn

import torch

from punctkit.files import PunctkitError
from punctkit.train.experiment import RunArgs, exp_lock

# what one process runs: work(run, rank=, world_size=, device=) -> its result (train/trainer.py's train_process);
# spawned, it must be a module-level function (it is pickled by name)
Work = Callable[..., Any]


class TrainProcessError(RuntimeError):
    """An unexpected exception in a spawned training process (a bug, not a user error)."""


class RemoteTraceback(Exception):
    """A spawned process's traceback, as text: the cause of the exception the launcher raises."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'


def torchrun_member() -> bool:
    """This process was started by torchrun (RANK and WORLD_SIZE set, more than one process)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def leave_process(code: int = 0) -> NoReturn:
    """End a DDP process whose work is done (its files written and closed) without the interpreter's
    teardown: its log handlers and standard streams are flushed, then the process exits with `code`.

    DistributedDataParallel keeps its process group alive in C++ after `destroy_process_group` (torch
    2.13: a gloo group's threads `pt_gloo_runloop` and `gloo_tcp_loop` still run, though no Python object
    refers to it), and the exit-time destruction of a process with those threads running aborts now and
    then (SIGABRT, 'terminate called without an active exception', seen on CI in rank 1 under torchrun):
    a run that had finished and written its model then failed."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def world_size_of(ngpu: int, nproc: int) -> int:
    """Number of DDP processes for `--ngpu` / `--nproc` (checked against the visible GPUs)."""
    if nproc < 1:
        raise PunctkitError(f"--nproc must be at least 1, got {nproc}")
    if ngpu > 0 and nproc > 1 and nproc != ngpu:
        raise PunctkitError(f"--nproc {nproc} with --ngpu {ngpu}: with GPUs there is one process per GPU")
    if ngpu > 1 and torch.cuda.device_count() < ngpu:
        raise PunctkitError(f"--ngpu {ngpu} but {torch.cuda.device_count()} CUDA device(s) are visible")
    return max(ngpu, nproc)


def wrap_ddp(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """The one place a model is wrapped for DDP (the trainer keeps the bare model for
    state dicts, validation and the optimizer's parameter groups)."""
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    # models may leave parameters unused in a step (e.g. optional heads): let DDP find them
    return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=True)


def ddp_net(model: torch.nn.Module, device: torch.device, world_size: int) -> torch.nn.Module:
    """What a training step calls: the model itself, or with more than one process its DDP wrapper."""
    return wrap_ddp(model, device) if world_size > 1 else model


def ddp_process(local_rank: int, world: int, work: Work, run: RunArgs, rank: int | None = None,
                master: tuple[str, str] | None = None, lock_force: bool | None = None) -> Any:
    """One DDP process: join the group (env:// rendezvous at `master` = (address, port)), run
    `work` on its shard, leave.

    `lock_force` not None (torchrun, where no launcher of ours holds the exp lock): rank 0
    takes the lock and tells every rank whether it got it."""
    rank = local_rank if rank is None else rank
    if master:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = master
    cuda = run.ngpu > 0
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.distributed.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    lock = None
    try:
        if lock_force is not None:
            box: list[str | None] = [None]
            if rank == 0:
                lock = exp_lock(run.exp_dir, lock_force, run.quiet)
                try:
                    lock.acquire()
                except PunctkitError as e:
                    box[0] = str(e)
            torch.distributed.broadcast_object_list(box, src=0)
            if box[0] is not None:
                raise PunctkitError(box[0])
        result = work(run, rank=rank, world_size=world, device=device)
        # leave together: rank 0 still writes model.avg.pt, and a gloo rank that tears its
        # group down while a peer is busy with it can abort (seen on CI as SIGABRT in rank 1)
        torch.distributed.barrier()
        return result
    finally:
        if lock is not None:
            lock.release()
        torch.distributed.destroy_process_group()


GRACE_S = 10.0  # seconds the other processes of a failed run have to end (and report) before a SIGTERM


def spawn(work: Work, world: int, run: RunArgs) -> None:
    """Run `work` in `world` spawned processes (rank = local rank) and wait for them; a failed
    process's exception is raised here (see the module's docstring)."""
    master = (os.environ.get("MASTER_ADDR", "127.0.0.1"), os.environ.get("MASTER_PORT") or str(_free_port()))
    with tempfile.TemporaryDirectory(prefix="punctkit-ddp-") as reports:
        try:
            procs = torch.multiprocessing.start_processes(_child, args=(world, work, run, master, reports),
                                                          nprocs=world, join=False, start_method="spawn")
            while not procs.join(grace_period=GRACE_S):
                pass
        except (torch.multiprocessing.ProcessRaisedException, torch.multiprocessing.ProcessExitedException) as e:
            raise_reported(read_reports(Path(reports)), e.error_index)
            raise


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(local_rank: int, world: int, work: Work, run: RunArgs, master: tuple[str, str], reports: str) -> None:
    """A spawned process: `ddp_process`, its exception reported into `reports` before it goes on up."""
    try:
        ddp_process(local_rank, world, work, run, None, master)
    except Exception as e:
        write_report(Path(reports), local_rank, e)
        raise
    leave_process(0)  # done: the launcher waits on the exit codes, and the teardown may abort (leave_process)


def write_report(folder: Path, rank: int, e: BaseException) -> None:
    """Record `e` (raised in process `rank`, being handled) as `folder/rank<N>.json`, plain data only;
    written whole or not at all (a process terminated meanwhile leaves no partial record)."""
    record = {"rank": rank, "time": time.time(), "type": type(e).__name__, "message": str(e),
              "user_error": isinstance(e, PunctkitError), "traceback": traceback.format_exc()}
    try:
        tmp = folder / f".rank{rank}.json.tmp"
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, folder / f"rank{rank}.json")
    except OSError:
        pass  # the launcher falls back on torch's own report of the failure


def read_reports(folder: Path) -> list[dict[str, Any]]:
    """The records `write_report` left in `folder`, by rank."""
    out = []
    for p in folder.glob("rank*.json"):
        try:
            r = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and {"rank", "time", "type", "message", "user_error", "traceback"} <= r.keys():
            out.append(r)
    return sorted(out, key=lambda r: r["rank"])


def raise_reported(reports: list[dict[str, Any]], failed: int | None) -> None:
    """Raise what the processes reported: the earliest user error, else (when process `failed`, the
    one torch saw end first, reported) the earliest exception, as a `TrainProcessError`. Returns
    when there is neither: the caller raises torch's report of process `failed` then."""
    user = [r for r in reports if r["user_error"]]
    if user:
        raise_report(min(user, key=lambda r: r["time"]))
    if any(r["rank"] == failed for r in reports):
        raise_report(min(reports, key=lambda r: r["time"]))


def raise_report(report: dict[str, Any]) -> NoReturn:
    """The exception a process's record stands for, with the process's traceback as its cause."""
    cause = RemoteTraceback(str(report["traceback"]))
    if report["user_error"]:
        raise PunctkitError(str(report["message"])) from cause
    what = f"{report['type']}: {report['message']}" if report["message"] else str(report["type"])
    raise TrainProcessError(f"training process {report['rank']}: {what}") from cause
