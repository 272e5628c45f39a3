"""Running sums over samples on one process or on a dask.distributed cluster, with the same code.

Every statistic promptprism sums over samples is a mergeable accumulator (``update`` / ``merge`` /
``compute``). A *partition task* builds the accumulator of one block of rows; a runner maps the tasks and
combines their accumulators: :class:`LocalRunner` in order, :class:`DaskRunner` on a cluster with a tree
reduction. Tasks are pure functions of their arguments (inputs are read inside the task, from the files),
so a task that the scheduler re-runs after losing a worker gives the same accumulator and nothing is
counted twice; merges copy their left operand, so a re-run merge cannot double-count either.
"""

from .runner import (
    DaskRunner,
    LocalRunner,
    Runner,
    current_client,
    current_runner,
    execution,
    open_client,
    partition_rows,
)

__all__ = ["DaskRunner", "LocalRunner", "Runner", "current_client", "current_runner", "execution",
           "open_client", "partition_rows"]
