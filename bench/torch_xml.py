#!/usr/bin/env python3
"""The PyTorch peer of `hetsgd train`: the same sparse-input MLP, loss,
optimizer and evaluation, so that time-to-accuracy can be compared on the
same machine.

Model: sparse input (EmbeddingBag, mode "sum", per-sample weights = feature
values) + bias -> ReLU -> dropout -> Linear -> softmax cross-entropy against
uniform targets over each point's labels. Adam. Evaluation on the whole test
set after every epoch; train_seconds excludes loading and evaluation.

Writes JSON Lines to stdout with the same "eval" fields as hetsgd's run log.
"""
import argparse
import json
import sys
import time

import numpy as np
import torch

from xc import read_xc  # bench/xc.py, beside this script


def gather(ptr, rows):
    """Positions of the entries of the given CSR rows, concatenated, and the
    rows' lengths (vectorised, no Python loop)."""
    starts, lens = ptr[rows], ptr[rows + 1] - ptr[rows]
    total = int(lens.sum())
    offsets = np.cumsum(lens) - lens
    pos = np.repeat(starts - offsets, lens) + np.arange(total)
    return pos, lens, offsets


class Data:
    def __init__(self, path):
        self.indptr, self.idx, self.val, self.lptr, self.lab, self.d, self.l = read_xc(path)
        self.n = len(self.indptr) - 1
        self.idx_t, self.val_t = torch.from_numpy(self.idx), torch.from_numpy(self.val)

    def batch(self, rows):
        pos, _, offsets = gather(self.indptr, rows)
        lpos, llens, _ = gather(self.lptr, rows)
        target = torch.zeros(len(rows), self.l)
        r = np.repeat(np.arange(len(rows)), llens)
        w = np.repeat(1.0 / np.maximum(llens, 1), llens).astype(np.float32)
        target[torch.from_numpy(r), torch.from_numpy(self.lab[lpos])] = torch.from_numpy(w)
        pos_t = torch.from_numpy(pos)
        return self.idx_t[pos_t], torch.from_numpy(offsets), self.val_t[pos_t], target


class MLP(torch.nn.Module):
    def __init__(self, d, hidden, l, dropout):
        super().__init__()
        self.emb = torch.nn.EmbeddingBag(d, hidden, mode="sum")
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        bound = 1 / d ** 0.5  # nn.Linear's default init for a d-input layer
        torch.nn.init.uniform_(self.emb.weight, -bound, bound)
        torch.nn.init.uniform_(self.b1, -bound, bound)
        self.drop = torch.nn.Dropout(dropout)
        self.out = torch.nn.Linear(hidden, l)

    def forward(self, idx, offsets, val):
        h = torch.relu(self.emb(idx, offsets, per_sample_weights=val) + self.b1)
        return self.out(self.drop(h))


def evaluate(model, test, batch):
    model.eval()
    p = np.zeros(3)
    loss, labeled = 0.0, 0
    with torch.no_grad():
        for lo in range(0, test.n, batch):
            rows = np.arange(lo, min(lo + batch, test.n))
            idx, off, val, target = test.batch(rows)
            z = model(idx, off, val)
            top = torch.topk(z, 5, dim=1).indices
            hits = (target.gather(1, top) > 0).float()
            p += [float(hits[:, 0].sum()), float(hits[:, :3].sum()) / 3, float(hits.sum()) / 5]
            has = target.sum(1) > 0
            loss += float(-(target * torch.log_softmax(z, 1)).sum(1)[has].sum())
            labeled += int(has.sum())
    model.train()
    return p / test.n, loss / max(labeled, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder with train.txt and test.txt (XC format)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    train, test = Data(a.data + "/train.txt"), Data(a.data + "/test.txt")
    model = MLP(train.d, a.hidden, train.l, a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    print(json.dumps({"event": "config", "peer": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      **{k: v for k, v in vars(a).items()}}), flush=True)
    train_seconds, samples = 0.0, 0
    for epoch in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        perm = rng.permutation(train.n)
        for lo in range(0, train.n, a.batch):
            rows = perm[lo:lo + a.batch]
            idx, off, val, target = train.batch(rows)
            z = model(idx, off, val)
            loss = -(target * torch.log_softmax(z, 1)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            samples += len(rows)
        train_seconds += time.perf_counter() - t0
        (p1, p3, p5), test_loss = evaluate(model, test, 1024)
        print(json.dumps({"event": "eval", "epoch": epoch, "samples": samples, "train_seconds": train_seconds,
                          "p1": p1, "p3": p3, "p5": p5, "loss": test_loss}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
