#!/usr/bin/env bash
# lsh_small.sh — when the sampled output layer does not pay: the dense and
# the sampled layer (--output lsh) on small label sets, Bibtex (159 labels)
# and Delicious (983), on one and on four devices, and the slide strategy
# (SLIDE's own recipe on the sampled layer), in alternated rounds so that
# the machine's load falls on each alike. Every run is sync's defaults
# (slide: its own) for 10 epochs. Prints each run's training seconds and
# best P@1, then each setting's ratio to dense's time in the same round
# (min, median, max). BENCHMARKS.md §17 records a run.
#
# Usage: bench/lsh_small.sh [ROUNDS]   (default 5)
# Environment: BIN (default: hetsgd built from this checkout), DATA (the
# folder holding bibtex/ and delicious/; default ../shared/data).
set -euo pipefail
rounds=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA:-$root/../shared/data}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin=${BIN:-}
if [ -z "$bin" ]; then
  (cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd)
  bin=$out/hetsgd
fi
echo "set devices layer round train_seconds best_p1" >"$out/runs.txt"
for set in bibtex delicious; do
  for dev in 1 4; do
    for i in $(seq 1 "$rounds"); do
      for layer in dense lsh slide; do
        log=$out/run.jsonl
        rm -f "$log"
        case $layer in
        slide) how=(--strategy slide) ;;
        *) how=(--output "$layer") ;;
        esac
        "$bin" train --data "$data/$set" --devices "$dev" "${how[@]}" --epochs 10 \
          --progress off --log "$log" >/dev/null 2>&1
        python3 - "$log" "$set $dev $layer $i" >>"$out/runs.txt" <<'EOF'
import json, sys
done = [json.loads(l) for l in open(sys.argv[1]) if '"done"' in l][-1]
print(sys.argv[2], round(done["train_seconds"], 3), round(done["best_p1"], 4))
EOF
      done
    done
  done
done
cat "$out/runs.txt"
python3 - "$out/runs.txt" <<'EOF'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
t = collections.defaultdict(dict)
p1 = collections.defaultdict(list)
for s, d, layer, i, secs, p in rows:
    t[(s, d, i)][layer] = float(secs)
    p1[(s, d, layer)].append(float(p))
for layer in ("lsh", "slide"):
    by = collections.defaultdict(list)
    for (s, d, i), v in t.items():
        by[(s, d)].append(v[layer] / v["dense"])
    every = []
    print(f"\nset devices  {layer}/dense time: min median max   P@1 dense  {layer} (mean)")
    for (s, d), r in sorted(by.items()):
        every += r
        print(f"{s} {d}  {min(r):.2f} {statistics.median(r):.2f} {max(r):.2f}   "
              f"{statistics.mean(p1[(s, d, 'dense')]):.4f} {statistics.mean(p1[(s, d, layer)]):.4f}")
    print(f"{layer}, every round ({len(every)}): {min(every):.2f}-{max(every):.2f}x, median {statistics.median(every):.2f}x")
EOF
