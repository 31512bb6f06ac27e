#!/usr/bin/env python3
"""Times one training step of the papers' sparse MLP in PyTorch at a given
shape: the peer of `hetsgd step`. The same model as bench/torch_xml.py
(EmbeddingBag sum over the sparse input + bias, ReLU, Linear, softmax
cross-entropy against uniform targets over each point's labels), a random
batch of the same size, non-zeros and labels per point, and one optimizer
step per iteration: forward, loss, backward, update. The loss takes the
log-probabilities at the label positions (gather), which is faster than a
dense target matrix. Prints one JSON line with the median step time.
"""
import argparse
import json
import sys
import time

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_xml import MLP  # noqa: E402

SHAPES = {"amazon-670k": (135909, 670091, 76), "delicious-200k": (782585, 205443, 301),
          "delicious": (500, 983, 18), "bibtex": (1836, 159, 68)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--like", default="amazon-670k", choices=sorted(SHAPES))
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    d, l, nnz = SHAPES[a.like]
    idx = np.concatenate([rng.choice(d, nnz, replace=False) for _ in range(a.batch)])
    val = rng.random(a.batch * nnz).astype(np.float32)
    offsets = torch.arange(0, a.batch * nnz, nnz)
    labels = torch.from_numpy(np.stack([rng.choice(l, 5, replace=False) for _ in range(a.batch)]))
    idx, val = torch.from_numpy(idx), torch.from_numpy(val)
    model = MLP(d, a.hidden, l, 0.0)
    opt = (torch.optim.SGD(model.parameters(), lr=1e-3) if a.optimizer == "sgd"
           else torch.optim.Adam(model.parameters(), lr=1e-3))

    def step():
        z = model(idx, offsets, val)
        loss = -torch.log_softmax(z, 1).gather(1, labels).mean(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()  # warm-up: allocations, first-touch page faults
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "like": a.like, "batch": a.batch, "hidden": a.hidden, "optimizer": a.optimizer,
                      "step_ms": 1e3 * times[len(times) // 2], "steps": a.steps}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
