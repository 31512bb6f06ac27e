#!/usr/bin/env python3
"""What a model's first choices are on a set's test split, by the labels'
frequency rank on its training split (BENCHMARKS.md §16): P@1, the share
of the points whose first choice is a label below the ten most frequent,
and the labels chosen most often, each with the share of the points it is
chosen on and how often it is right.

Usage: bench/xc_first_choice.py DIR PREDICTIONS, with DIR holding
train.txt and test.txt (XC text format) and PREDICTIONS the tab-separated
output of `hetsgd predict --data DIR --top 1` (a point's index, then
label:score).
"""
import collections
import os
import sys

import numpy as np

from xc import read_xc  # bench/xc.py, beside this script


def main(folder, predictions):
    _, _, _, _, train_labels, _, k = read_xc(os.path.join(folder, "train.txt"))
    _, _, _, lptr, test_labels, _, _ = read_xc(os.path.join(folder, "test.txt"))
    count = np.bincount(np.asarray(train_labels, dtype=np.int64), minlength=k)
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(-count, kind="stable")] = np.arange(k)
    chosen, right = collections.Counter(), collections.Counter()
    with open(predictions) as f:
        for line in f:
            point, first = line.split("\t")[:2]
            i, label = int(point), int(first.split(":")[0])
            chosen[label] += 1
            right[label] += label in test_labels[lptr[i]:lptr[i + 1]]
    n = sum(chosen.values())
    below = sum(c for label, c in chosen.items() if rank[label] >= 10)
    print(f"P@1 {sum(right.values()) / n:.4f}; first choice below the ten most frequent labels on {below / n:.3f} of the points")
    for label, c in chosen.most_common(8):
        print(f"  rank {rank[label] + 1}: chosen on {c / n:.3f} of the points, right on {right[label] / c:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
