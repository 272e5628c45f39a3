"""Accumulator of per-mode score statistics (PromptSplit's scoring pass): top samples and per-prompt sums."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .accumulators import GroupSumAccumulator, TopKAccumulator


@dataclass
class ModeStats:
    """Mergeable per-side statistics of mode scores s_ij = psi(s_i) . v_j.

    ``top`` keeps the samples with the largest |score| per mode; ``groups`` keeps, per prompt, the sum of
    scores (k columns) and the sum of squared scores (k columns), from which a prompt's contribution to
    each eigenvalue follows (see :func:`promptprism.methods.promptsplit.core.prompt_contributions`).
    """

    top: TopKAccumulator
    groups: GroupSumAccumulator  #: per prompt: [sum of scores (k), sum of squared scores (k)]

    @classmethod
    def empty(cls, top_k: int, n_modes: int, n_groups: int) -> ModeStats:
        """No samples seen yet."""
        return cls(TopKAccumulator(top_k, n_modes), GroupSumAccumulator(n_groups, 2 * n_modes))

    def update(self, ids: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> ModeStats:
        """Add samples ``ids`` (global indices) with prompt ``labels`` and ``scores`` (rows x modes)."""
        self.top.update(ids, scores)
        self.groups.update(labels, np.concatenate([scores, scores * scores], axis=1))
        return self

    def merge(self, other: ModeStats) -> ModeStats:
        """Fold another partition's statistics in."""
        self.top.merge(other.top)
        self.groups.merge(other.groups)
        return self

    def compute(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """((top ids, top scores), (per-prompt sums, per-prompt counts))."""
        return self.top.compute(), self.groups.compute()
