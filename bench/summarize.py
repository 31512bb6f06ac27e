#!/usr/bin/env python3
"""Summarise run logs (JSON Lines with "eval" records, from hetsgd or the
PyTorch peer): best P@1 and the training seconds to first reach a target.

usage: summarize.py TARGET LOG [LOG ...]
"""
import json
import sys


def load(path):
    evals = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("event") == "eval":
                evals.append(rec)
    return evals


def main():
    target = float(sys.argv[1])
    print(f"| run | best P@1 | at train s | train s to P@1 ≥ {target} |")
    print("| --- | --- | --- | --- |")
    for path in sys.argv[2:]:
        evals = load(path)
        if not evals:
            print(f"| {path} | – | – | – |")
            continue
        best = max(evals, key=lambda e: (e["p1"], -e["train_seconds"]))
        hit = next((e["train_seconds"] for e in evals if e["p1"] >= target), None)
        name = path.rsplit("/", 1)[-1].removesuffix(".jsonl")
        hit_s = f"{hit:.2f}" if hit is not None else "not reached"
        print(f"| {name} | {best['p1']:.4f} | {best['train_seconds']:.2f} | {hit_s} |")


if __name__ == "__main__":
    main()
