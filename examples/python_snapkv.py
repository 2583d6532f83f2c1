"""SnapKV's score written in Python: a momentkv.ScorerPress the engine calls during compression.

PySnapKV re-implements src/kv/presses/snapkv.cpp in numpy: the engine passes one layer and KV
head at a time (keys, values and positions of the rows it holds, the last `window` observed
queries of the head's group) and applies its own selection, sinks/window protection, allocation
and NC around the returned scores. It keeps the same rows as the built-in `snapkv`
(python/tests/test_python_press.py checks it at several budgets, with adaptive and pyramid
allocation and NC on top):

    from python_snapkv import PySnapKV
    model.generate(text, 8, temperature=0, press=PySnapKV(window=32, alloc="adaptive"), kv_budget=64)
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import momentkv


class PySnapKV(momentkv.ScorerPress):
    """SnapKV's score in numpy: per query head of the group, the softmax of each observed query
    over the rows it sees (causal inside the window), summed over the window; max-pooled (kernel,
    stride 1, same padding) over the rows before the window and, apart, over the window's rows;
    mean over the group's query heads. kernel "auto" is the engine's kernel for the layer's budget
    (momentkv.presses.pooling_kernel(self.layer_budget))."""

    kernel = "auto"

    def score(self, keys, values, queries, positions, layer, kv_head, query_positions):
        n = len(positions)
        n_obs, group, _ = queries.shape
        scale = np.float32(self.geometry["scale"])
        # Rows before the observation window, and the rows each observed query sees.
        prefix = int(np.searchsorted(positions, query_positions[0] - 1, side="right")) if n_obs else n
        visible = np.searchsorted(positions, query_positions, side="right")
        kernel = momentkv.presses.pooling_kernel(self.layer_budget) if self.kernel == "auto" else self.kernel
        half = kernel // 2
        out = np.zeros(n, np.float32)
        for h in range(group):
            sums = np.zeros(n, np.float32)
            logits = (queries[:, h, :] @ keys.T) * scale  # (n_obs, n) float32
            for t in range(n_obs):
                seen = visible[t]
                if seen <= 0:
                    continue
                e = np.exp(logits[t, :seen] - logits[t, :seen].max())
                norm = np.float32(1.0 / e.sum(dtype=np.float64))  # the engine sums exp in double
                sums[:seen] += norm * e
            for lo, hi in ((0, prefix), (prefix, n)):  # the two segments are pooled apart
                if hi > lo:
                    padded = np.pad(sums[lo:hi], half, constant_values=-np.inf)
                    out[lo:hi] += sliding_window_view(padded, kernel).max(axis=1) / np.float32(group)
        return out
