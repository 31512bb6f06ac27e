#!/usr/bin/env python3
"""Near-duplicate families of a multi-label set, for comparing a real set
with its stand-in (BENCHMARKS.md §16).

Two points are near-duplicates when both have at least 5 features and
their feature sets overlap by a Jaccard index of at least 0.5 (shorter
rows coincide by chance); a family is a connected group of them. Over
the training and test splits together it prints:

- the share of the points in a family, the number of families and the
  largest ones;
- the share of the test points with a near-duplicate in the training
  split, and of the training points with one in the training split;
- the labels' share within a family by their place (a family's labels
  sorted by the share of its points carrying them, at eleven places
  from its first label to its last, its last being at the family's mean
  number of labels a point), averaged over the families of at least 3
  points, weighted by their size.

With --drop OUT it also writes the set without its near-duplicates to
OUT (the training points with a near-duplicate in the training split,
the test points with one in the training split), and with --drop-random
OUT the set without as many points of each split drawn at random
(--seed), whose epoch has as many steps: the difference between the two
is what the near-duplicates do to training.

Usage: bench/xc_families.py DIR [--drop OUT] [--drop-random OUT] [--seed S]
(DIR holds train.txt and test.txt in the XC text format, bench/xc.py).
Dense matrices: meant for sets of Delicious's or Bibtex's size.
"""
import argparse
import os

import numpy as np

from xc import presence  # bench/xc.py, beside this script

JACCARD = 0.5
MIN_FEATURES = 5



def near(a, b, same):
    """For each row of a, whether a row of b (another one when same) is
    its near-duplicate; and the pairs (i, j) that are, as index arrays."""
    na, nb = a.sum(1), b.sum(1)
    hit = np.zeros(len(a), dtype=bool)
    pairs_i, pairs_j = [], []
    for s in range(0, len(a), 2000):
        inter = a[s:s + 2000] @ b.T
        jac = inter / (na[s:s + 2000, None] + nb[None, :] - inter + 1e-9)
        ok = (jac >= JACCARD) & (na[s:s + 2000, None] >= MIN_FEATURES) & (nb[None, :] >= MIN_FEATURES)
        if same:
            ok[np.arange(len(ok)), s + np.arange(len(ok))] = False
        hit[s:s + 2000] = ok.any(1)
        i, j = np.nonzero(ok)
        pairs_i.append(i + s)
        pairs_j.append(j)
    return hit, np.concatenate(pairs_i), np.concatenate(pairs_j)


def families(x, y):
    n = len(x)
    parent = np.arange(n)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    _, pi, pj = near(x, x, True)
    for a, b in zip(pi, pj):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    roots = np.array([find(i) for i in range(n)])
    groups = {}
    for i, r in enumerate(roots):
        groups.setdefault(r, []).append(i)
    return [g for g in groups.values() if len(g) >= 2]


def label_places(y, fams):
    grid = np.linspace(0, 1, 11)
    acc, weight = np.zeros(len(grid)), 0
    for g in fams:
        if len(g) < 3:
            continue
        share = np.sort(y[g].mean(0))[::-1]
        k = max(1, int(round(y[g].sum(1).mean())))
        acc += np.interp(grid, (np.arange(k) + 0.5) / k, share[:k]) * len(g)
        weight += len(g)
    return acc / max(weight, 1)


def write_without(src, out, drop_train, drop_test):
    os.makedirs(out, exist_ok=True)
    for name, drop in (("train.txt", drop_train), ("test.txt", drop_test)):
        with open(os.path.join(src, name)) as f:
            head = f.readline().split()
            rows = f.readlines()[:len(drop)]
        kept = [r for r, d in zip(rows, drop) if not d]
        with open(os.path.join(out, name), "w") as f:
            f.write(f"{len(kept)} {head[1]} {head[2]}\n")
            f.writelines(r if r.endswith("\n") else r + "\n" for r in kept)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--drop")
    ap.add_argument("--drop-random")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    xtr, ytr = presence(os.path.join(a.dir, "train.txt"), np.float32)
    xte, yte = presence(os.path.join(a.dir, "test.txt"), np.float32)
    x, y = np.vstack([xtr, xte]), np.vstack([ytr, yte])
    fams = families(x, y)
    sizes = sorted((len(g) for g in fams), reverse=True)
    print(a.dir)
    print(f"  points in a family: {sum(sizes) / len(x):.3f} of {len(x)}, {len(fams)} families, largest {sizes[:8]}")
    train_hit, _, _ = near(xtr, xtr, True)
    test_hit, _, _ = near(xte, xtr, False)
    print(f"  with a near-duplicate in the training split: test points {test_hit.mean():.3f}, "
          f"training points {train_hit.mean():.3f}")
    print("  labels' share within a family by place: " + " ".join(f"{v:.2f}" for v in label_places(y, fams)))
    if a.drop:
        write_without(a.dir, a.drop, train_hit, test_hit)
    if a.drop_random:
        rng = np.random.default_rng(a.seed)
        rand_train = np.zeros(len(xtr), dtype=bool)
        rand_train[rng.choice(len(xtr), int(train_hit.sum()), replace=False)] = True
        rand_test = np.zeros(len(xte), dtype=bool)
        rand_test[rng.choice(len(xte), int(test_hit.sum()), replace=False)] = True
        write_without(a.dir, a.drop_random, rand_train, rand_test)


if __name__ == "__main__":
    main()
