#!/usr/bin/env python3
"""Two measures of how a multi-label set's features relate to its labels
and to one another, for comparing a real set with its stand-in
(BENCHMARKS.md §16):

- by bands of feature frequency rank, the mean over the features of what
  each says about the label it says most about (mutual information);
- by bands of label frequency rank, each label's most informative feature
  (mutual information between the feature's presence and the label's):
  the share of the label's points holding it (recall), the share of the
  feature's points carrying the label (precision), and the feature's
  share of all points;
- the mean log lift of co-occurring feature pairs, log(N·n_ij/(n_i·n_j))
  weighted by n_ij (as `hetsgd data gen` reports the labels'), and its
  spread over the pairs;
- each label's lead: over the features on at least 50 points, the
  largest excess of the feature's share among the label's points over
  its share among the other points; by the same bands, its quantiles
  over the labels, and how the 150 labels with the strongest leads
  share their lead features;
- the head: the share of the points holding one of the k most frequent
  labels, and the lifts of the pairs among the eight most frequent.

Usage: bench/xc_structure.py FILE [FILE ...], each in the XC text format
(bench/xc.py reads it). Values are read as presence. Dense matrices: meant for sets of Delicious's or
Bibtex's size (points × features bytes, and features² floats).
"""
import math
import sys

import numpy as np

from xc import presence  # bench/xc.py, beside this script



def mutual_information(x, y):
    n = x.shape[0]
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    n11 = xf.T @ yf
    nx, ny = xf.sum(0)[:, None], yf.sum(0)[None, :]

    def term(nab, na, nb):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.nan_to_num(nab / n * np.log(nab * n / (na * nb)))

    n10, n01 = nx - n11, ny - n11
    n00 = n - n11 - n10 - n01
    mi = term(n11, nx, ny) + term(n10, nx, n - ny) + term(n01, n - nx, ny) + term(n00, n - nx, n - ny)
    return mi, n11, nx[:, 0], ny[0]


def main(paths):
    for path in paths:
        x, y = presence(path)
        n = x.shape[0]
        print(path)
        mi, n11, nx, ny = mutual_information(x, y)
        order = np.argsort(-ny, kind="stable")
        k = y.shape[1]
        for a, b in bands((10, 50, 200), k):
            labels = [l for l in order[a:b] if ny[l] > 0]
            if not labels:
                continue
            best = [int(mi[:, l].argmax()) for l in labels]
            recall = np.mean([n11[f, l] / ny[l] for f, l in zip(best, labels)])
            precision = np.mean([n11[f, l] / max(nx[f], 1) for f, l in zip(best, labels)])
            share = np.mean([nx[f] / n for f in best])
            print(f"  label ranks {a + 1}-{b}: best feature on {recall:.3f} of the label's points, "
                  f"precision {precision:.3f}, on {share:.3f} of all points")
        # Each feature's information about the label it says most
        # about, by bands of feature frequency rank.
        forder = np.argsort(-nx, kind="stable")
        most = mi.max(1)
        print("  features by frequency rank, information about their best label (nats): "
              + ", ".join(f"{a + 1}-{b} {most[forder[a:b]].mean():.4f}" for a, b in bands((10, 50, 150), x.shape[1])))
        xf = x.astype(np.float64)
        c = xf.T @ xf
        df = np.diag(c).copy()
        np.fill_diagonal(c, 0)
        seen = c > 0
        with np.errstate(divide="ignore"):
            lift = np.log(c[seen] * n / np.outer(df, df)[seen])
        w = c[seen]
        mean = float((w * lift).sum() / w.sum())
        spread = math.sqrt(float((w * (lift - mean) ** 2).sum() / w.sum()))
        print(f"  feature pairs: mean log lift {mean:.3f}, spread {spread:.3f}")
        leads(x, y, n11, nx, ny, order)
        head(y, ny, order)


def bands(edges, n):
    """Rank bands [a, b) split at edges, up to n: the non-empty ones."""
    cuts = [0] + [e for e in edges if e < n] + [n]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if a < b]


def leads(x, y, n11, nx, ny, order):
    n, k = y.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = n11 / np.maximum(ny, 1)[None, :] - (nx[:, None] - n11) / np.maximum(n - ny, 1)[None, :]
    excess[nx < 50, :] = -1
    best, lead = excess.argmax(0), excess.max(0)
    for a, b in bands((10, 50, 200), k):
        print(f"  label ranks {a + 1}-{b}: lead excess {lead[order[a:b]].mean():.3f} on average")
    q = np.percentile(lead, [10, 50, 90, 99])
    print(f"  lead excess quantiles 10, 50, 90, 99 %: {' '.join(f'{v:.3f}' for v in q)}; "
          f"{int((lead > 0.5).sum())} labels above 0.5")
    top = np.argsort(-lead, kind="stable")[:150]
    feats = best[top]
    _, per = np.unique(feats, return_counts=True)
    print(f"  the {len(top)} strongest leads: labels on {float((ny[top] / n).mean()):.4f} of the points on average, "
          f"{len(per)} lead features, at most {int(per.max())} labels to one")


def head(y, ny, order):
    cover = [float((y[:, order[:k]].sum(1) > 0).mean()) for k in (1, 2, 3, 5, 10, 20)]
    print(f"  points holding one of the 1, 2, 3, 5, 10, 20 most frequent labels: {' '.join(f'{c:.3f}' for c in cover)}")
    h = order[:8]
    if len(h) < 2:
        return
    yh = y[:, h].astype(np.float64)
    lift = yh.shape[0] * (yh.T @ yh) / np.outer(ny[h], ny[h])
    pairs = lift[np.triu_indices(len(h), 1)]
    print(f"  pairs of the 8 most frequent labels: lifts {pairs.min():.2f} to {pairs.max():.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
