"""Propensity-scored precision and nDCG at 1, 3 and 5, computed as the
Extreme Classification Repository's tools (pyxclib's
compute_inv_propesity, psprecision and psndcg) define them, with NumPy on
dense arrays: the reference metric's Go evaluator is checked against.

Reads one JSON object on stdin: n_train (training points), counts (each
label's training points), A, B, labels (each test point's true labels)
and top (each test point's five best labels, best first). Prints the six
figures as a JSON object.
"""
import json
import sys

import numpy as np

q = json.load(sys.stdin)
counts = np.asarray(q["counts"], dtype=np.float64)
A, B, N = q["A"], q["B"], q["n_train"]
inv = 1.0 + (np.log(N) - 1.0) * (B + 1.0) ** A * (counts + B) ** (-A)

n, L, k = len(q["labels"]), len(counts), 5
truth = np.zeros((n, L + 1))  # column L: the padding, weight 0
for i, ls in enumerate(q["labels"]):
    truth[i, ls] = 1.0
inv = np.append(inv, 0.0)
top = np.asarray(q["top"], dtype=np.int64)
# The best ranking: each point's true labels by weight, padded.
best = np.argsort(-(truth * inv), axis=1, kind="stable")[:, :k]
best = np.where(np.take_along_axis(truth, best, axis=1) > 0, best, L)

def gains(idx):
    return np.take_along_axis(truth, idx, axis=1) * inv[idx]

def precision(g):
    return (np.cumsum(g, axis=1) / np.arange(1, k + 1)).mean(axis=0)

disc = 1.0 / np.log2(np.arange(k) + 2.0)
npos = truth[:, :L].sum(axis=1).astype(np.int64)
ideal = np.cumsum(1.0 / np.log2(np.arange(1, max(npos.max(), k) + 1) + 1.0))
norm = ideal[np.maximum(npos, 1) - 1]

def ndcg(g):
    dcg = np.cumsum(g * disc, axis=1)
    return np.array([(dcg[:, j] / np.minimum(norm, disc[: j + 1].sum())).mean() for j in range(k)])

psp = precision(gains(top)) / precision(gains(best))
psn = ndcg(gains(top)) / ndcg(gains(best))
out = {}
for j in (0, 2, 4):
    out["psp%d" % (j + 1)] = psp[j]
    out["psndcg%d" % (j + 1)] = psn[j]
print(json.dumps(out))
