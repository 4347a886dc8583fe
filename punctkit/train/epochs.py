"""Which batches an epoch trains on.

By default an epoch is one pass over the training windows, drawn again for each epoch
(`train_windows` and `bucket_batches` seeded by `train.seed` and the epoch): what every
earlier run did.

With `train.iters_per_epoch: N` (ESPnet's `--num_iters_per_epoch`) an epoch is the next N
batches of passes that run on across epochs: pass 1's batches, then pass 2's, and so on.
Each epoch ends in a validation and a checkpoint, so a pass that takes hours (MPNet over
2.1M words on a CPU) is cut into parts that survive a kill. The cursor (the pass, the
batches of it already trained, and its size) lives in the trainer's state and so in every
checkpoint: a resumed run, or one cut by `max_minutes` and given more time, goes on from the
batch after the last one trained, and the data seen is the data of an uninterrupted run.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from punctkit.data.streams import bucket_batches, shard, train_windows
from punctkit.files import PunctkitError
from punctkit.train.options import TrainOptions


def pass_batches(train_set, opts: TrainOptions, n: int, rank: int = 0, world_size: int = 1) -> list[list[int]]:
    """Pass `n`'s batches (this process's share): its windows set on `train_set`, seeded by
    (`train.seed`, n), so the same pass gives the same batches after a resume."""
    train_set.set_windows(train_windows(train_set.streams, opts.window, opts.seed, n, opts.time_delay), n)
    lengths = [train_set.n_words(i) for i in range(len(train_set))]
    return shard(bucket_batches(lengths, opts.batch_size, True, opts.seed * 1000 + n), rank, world_size)


def epoch_batches(train_set, opts: TrainOptions, state, epoch: int, rank: int = 0,
                  world_size: int = 1) -> tuple[Iterable[list[int]], int]:
    """The batches of `epoch` and their number: pass `epoch`'s, or with `iters_per_epoch` the next
    that many from the cursor (`state.data_pass`, `state.pass_batches`, `state.pass_size`)."""
    n = opts.iters_per_epoch
    if n is None:
        order = pass_batches(train_set, opts, epoch, rank, world_size)
        return order, len(order)
    return _from_cursor(train_set, opts, state, n, rank, world_size), n


def _from_cursor(train_set, opts: TrainOptions, state, n: int, rank: int, world_size: int) -> Iterator[list[int]]:
    """The next `n` batches of the passes; the cursor moves as each batch is handed out (a batch
    handed out is trained before anything is saved)."""
    order: list[list[int]] = []
    if state.data_pass and state.pass_batches < state.pass_size:  # go on in the pass under way
        order = pass_batches(train_set, opts, state.data_pass, rank, world_size)
    for _ in range(n):
        if state.pass_batches >= len(order):  # the pass is done (or none started): the next one
            state.data_pass += 1
            order = pass_batches(train_set, opts, state.data_pass, rank, world_size)
            state.pass_batches, state.pass_size = 0, len(order)
            if not order:
                raise PunctkitError("the training data gives no batches (train.iters_per_epoch needs windows)")
        state.pass_batches += 1
        yield order[state.pass_batches - 1]


def passes_done(state) -> float:
    """Passes over the training data so far, e.g. 1.25 (a quarter into the second)."""
    return max(state.data_pass - 1, 0) + state.pass_batches / max(state.pass_size, 1)
