#!/usr/bin/env bash
# streaming.sh — Streaming DiLoCo against DiLoCo, elastic and adaptive
# under BENCHMARKS.md §15's protocol: 4 devices at the Adaptive SGD paper's
# spread (1, 0.9, 0.8, 0.68), every strategy at its defaults, the virtual
# clock with 5 % noise, each run for the time sync needs for EPOCHS epochs
# on the same devices and network, seeds 1..SEEDS, best of the mean curve
# and the time it first reaches the target (90 % of the best mean P@1 of
# the set and network). Two networks: the tool's default (the devices of
# one server) and a slow one where every device is a node of its own on a
# 1 Gb/s link (--groups 4 --inter-bandwidth 1.25e8), where the overlap of
# communication with the inner steps should pay. Streaming DiLoCo runs at
# its defaults (two fragments, τ 1, α 0.5), with 4-bit outer gradients
# (bits=4), overlapping two steps (tau=2, the most the default h of 5
# allows) and without overlap (tau=0). Each line also gives the peak
# bytes one synchronisation all-reduces: the model for sync (every step),
# elastic, adaptive and DiLoCo, a fragment (half the model by default) for
# Streaming DiLoCo, an eighth of that in 4-bit values.
# BENCHMARKS.md §19 records a run.
#
# Usage: bench/streaming.sh [SEEDS] [EPOCHS]   (defaults 3, 30)
# Environment: BIN (default: hetsgd built from this checkout), DATA (the
# folder holding bibtex/ and delicious/; default ../shared/data), SETS
# (default "bibtex delicious"), RUNS (the runs beside sync, as listed
# below), KEEP (a folder to keep the run logs in).
set -euo pipefail
seeds=${1:-3}
epochs=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA:-$root/../shared/data}
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  out=$(cd "$KEEP" && pwd)
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
bin=${BIN:-}
if [ -z "$bin" ]; then
  (cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd)
  bin=$out/hetsgd
fi
common=(--devices 4 --speeds 1,0.9,0.8,0.68 --time virtual --noise 0.05 --eval-every 0.5 --progress off --force)
for set in ${SETS:-bibtex delicious}; do
  for net in default slow; do
    case $net in
    default) nets=() ;;
    slow) nets=(--groups 4 --inter-bandwidth 1.25e8) ;;
    esac
    for seed in $(seq 1 "$seeds"); do
      log=$out/$set-$net-sync-$seed.jsonl
      "$bin" train --data "$data/$set" --strategy sync "${common[@]}" "${nets[@]}" --epochs "$epochs" --seed "$seed" --log "$log" >/dev/null
      budget=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "\"done\"" in l][-1]["train_seconds"])' "$log")
      for run in ${RUNS:-diloco streaming-diloco streaming-diloco:bits=4 streaming-diloco:tau=2 streaming-diloco:tau=0 elastic adaptive}; do
        strat=${run%%:*}
        opts=()
        if [ "$run" != "$strat" ]; then
          opts=(--"$strat.${run#*:}")
          opts=("${opts[0]%%=*}" "${opts[0]#*=}")
        fi
        "$bin" train --data "$data/$set" --strategy "$strat" "${opts[@]}" "${common[@]}" "${nets[@]}" --epochs 0 \
          --time-budget "$budget" --seed "$seed" --log "$out/$set-$net-$run-$seed.jsonl" >/dev/null
      done
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, math, os, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    name = os.path.basename(path)[:-len(".jsonl")]
    set_, net, rest = name.split("-", 2)
    run, seed = rest.rsplit("-", 1)
    recs = [json.loads(l) for l in open(path)]
    evals = [(r["train_seconds"], r["p1"]) for r in recs if r.get("event") == "eval"]
    cfg = next(r for r in recs if r.get("event") == "config")
    dims = [cfg["features"]] + cfg["hidden"] + [cfg["labels"]]
    params = sum((a + 1) * b for a, b in zip(dims, dims[1:]))
    runs.setdefault((set_, net), {}).setdefault(run, []).append((evals, params))

def mean_curve(list_):
    # The mean P@1 of the seeds at each evaluation all of them reached.
    n = min(len(e) for e, _ in list_)
    return [(sum(e[i][0] for e, _ in list_) / len(list_), sum(e[i][1] for e, _ in list_) / len(list_)) for i in range(n)]

def wire(run, params):
    b = 4 * params
    if run.startswith("streaming-diloco"):
        b /= 2  # a fragment: the default two
        if "bits=4" in run:
            b /= 8  # each device's codes, gathered by every other
    return f"{b/1e6:.3f} MB"

for (set_, net), by in sorted(runs.items()):
    curves = {r: mean_curve(l) for r, l in by.items()}
    best = {r: max(c, key=lambda x: x[1]) for r, c in curves.items()}
    target = 0.9 * max(p for _, p in best.values())
    print(f"\n{set_}, {net} network (target P@1 {target:.4f}, {len(next(iter(by.values())))} seeds)\n")
    print("| strategy | best mean P@1 | virtual s to target | peak bytes a sync |")
    print("| --- | --- | --- | --- |")
    for r in ["sync", "elastic", "adaptive", "diloco", "streaming-diloco", "streaming-diloco:bits=4", "streaming-diloco:tau=2", "streaming-diloco:tau=0"]:
        if r not in curves:
            continue
        t = next((s for s, p in curves[r] if p >= target), math.nan)
        params = by[r][0][1]
        print(f"| {r} | {best[r][1]:.4f} | {'–' if math.isnan(t) else f'{t:.4g}'} | {wire(r, params)} |")
PY
