#!/usr/bin/env bash
# The thread ladder of the Amazon-670K-like set (issue 48): for every
# thread count from 1 to the machine's CPUs (or those given),
#   - one epoch with the sampled output layer (--output lsh, its defaults),
#     ROUNDS times (default 1), the thread counts in turn each round: the
#     table gives the median round's samples/s, and every round's ratio;
#   - EPOCHS_DENSE (default 0.1) of an epoch with the dense layer;
#   - the dense and the sampled training step at the Amazon-670K shape
#     (hetsgd step --output both, Adam), the dense one at fp32 and bf16
#     (--precision both; bf16 where the CPU has AVX512-BF16);
# then PyTorch (the peer script, --device cpu) on the most threads, fp32
# and bf16, for PEER_STEPS (default 20) batches. Usage:
#
#   bench/threads.sh PEER_SCRIPT [OUT_DIR] [THREADS...]
#
# PEER_SCRIPT is torch_gpu_peer.py (the peers' folder). The set is made
# in OUT_DIR/amz60k when missing (data gen --like amazon-670k --points
# 60000 --seed 3, a few seconds). Installs Debian's python3-torch and
# OpenBLAS when they are missing (root and apt). PyTorch runs as
# bench/peer_xml.sh runs it: OpenBLAS on one thread under PyTorch's own,
# its core type set on AVX-512 CPUs.
#
# A count of threads is every core the run uses: --threads n also sets
# GOMAXPROCS, which the background table builds share. Nothing else should
# run on the machine meanwhile: the figures are ratios of one run's times.
set -euo pipefail
peer=${1:?usage: bench/threads.sh PEER_SCRIPT [OUT_DIR] [THREADS...]}
out=${2:-out/threads}
shift $(( $# < 2 ? $# : 2 ))
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
if [ ! -f "$peer" ]; then
  echo "threads: no peer script at $peer" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  ladder=("$@")
else
  ladder=()
  for ((t = 1; t <= $(nproc); t++)); do ladder+=("$t"); done
fi
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "threads: installing python3-torch from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-numpy libopenblas0-pthread >/dev/null
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd)
h="$out/hetsgd"
[ -f "$out/amz60k/train.txt" ] || "$h" data gen --like amazon-670k --points 60000 --seed 3 --out "$out/amz60k" >/dev/null

rounds=${ROUNDS:-1}
for ((r = 1; r <= rounds; r++)); do
  for t in "${ladder[@]}"; do
    "$h" train --data "$out/amz60k" --output lsh --epochs 1 --eval-points 1000 --threads "$t" \
      --progress off --log "$out/lsh-t$t-r$r.jsonl" --force >"$out/lsh-t$t-r$r.txt" 2>&1
  done
done
for t in "${ladder[@]}"; do
  "$h" train --data "$out/amz60k" --epochs "${EPOCHS_DENSE:-0.1}" --eval-points 1000 --threads "$t" \
    --progress off --log "$out/dense-t$t.jsonl" --force >"$out/dense-t$t.txt" 2>&1
  GOMAXPROCS=$t "$h" step --like amazon-670k --optimizer adam --steps 3 --output both --precision both >"$out/step-t$t.txt" 2>&1
done
most=${ladder[-1]}
export OPENBLAS_NUM_THREADS=1
if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
"$py" "$peer" "$out/amz60k/train.txt" "$out/amz60k/test.txt" --device cpu --threads "$most" \
  --precision fp32,bf16 --max-steps "${PEER_STEPS:-20}" --test-points 500 >"$out/torch-t$most.jsonl" 2>"$out/torch-t$most.err"

"$py" - "$out" "$most" "$rounds" "${ladder[@]}" <<'EOF'
import json, statistics, sys
out, most, rounds, ladder = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def run(name):
    ev = [json.loads(l) for l in open(f"{out}/{name}.jsonl")]
    done = [e for e in ev if e.get("event") == "done"][-1]
    evals = [e for e in ev if e.get("event") == "eval"]
    secs = evals[-1]["train_seconds"] if evals and "train_seconds" in evals[-1] else done.get("train_seconds")
    samples = evals[-1].get("samples", 0) if evals else 0
    return secs, samples, evals[-1]["p1"] if evals else float("nan")
def step_ms(t, kind="fused"):
    last = open(f"{out}/step-t{t}.txt").read().strip().splitlines()[-1]
    return json.loads(last)["step_ms"].get(kind, float("nan"))  # no fused-bf16 without AVX512-BF16
rows = []
speed = {t: [] for t in ladder}  # the sampled layer's samples/s, a round each
for t in ladder:
    for r in range(1, rounds + 1):
        s_, n_, _ = run(f"lsh-t{t}-r{r}")
        speed[t].append(n_ / s_)
for t in ladder:
    ls, ln, lp = run(f"lsh-t{t}-r{rounds}")
    ln = statistics.median(speed[t]) * ls  # the median round's samples/s
    ds, dn, dp = run(f"dense-t{t}")
    rows.append((t, ls, ln / ls, lp, ds, dn / ds, dp, step_ms(t), step_ms(t, "sampled"), step_ms(t, "fused-bf16")))
base = rows[0]
print(f"{'threads':>7} {'lsh s':>8} {'lsh samples/s':>14} {'x':>5} {'P@1':>6} {'dense s':>8} {'dense samples/s':>16} {'x':>5} {'step ms':>8} {'x':>5} {'bf16 step ms':>12} {'x':>5} {'lsh step ms':>11} {'x':>5}")
for r in rows:
    print(f"{r[0]:>7} {r[1]:>8.2f} {r[2]:>14.0f} {r[2]/base[2]:>5.2f} {r[3]:>6.4f} {r[4]:>8.2f} {r[5]:>16.0f} {r[5]/base[5]:>5.2f} {r[7]:>8.0f} {base[7]/r[7]:>5.2f} {r[9]:>12.0f} {base[9]/r[9]:>5.2f} {r[8]:>11.1f} {base[8]/r[8]:>5.2f}")
if rounds > 1:
    for t in ladder[1:]:
        ratios = [a / b for a, b in zip(speed[t], speed[ladder[0]])]
        print(f"lsh on {t} threads against {ladder[0]}, round by round: " + ", ".join(f"{x:.2f}" for x in ratios)
              + f"; samples/s on {t}: " + ", ".join(f"{x:.0f}" for x in speed[t]) + f"; on {ladder[0]}: " + ", ".join(f"{x:.0f}" for x in speed[ladder[0]]))
lsh = rows[-1][2]
for l in open(f"{out}/torch-t{most}.jsonl"):
    p = json.loads(l)
    print(f"pytorch {p['version']} {p['precision']} on {p['threads']} threads: {p['samples_per_s']} samples/s; "
          f"hetsgd lsh on {most}: {lsh / p['samples_per_s']:.1f}x, hetsgd dense: {rows[-1][5] / p['samples_per_s']:.1f}x")
EOF
