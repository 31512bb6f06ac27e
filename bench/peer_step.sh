#!/usr/bin/env bash
# One training step at a paper's shape (default: Amazon-670k, batch 256,
# hidden 128, plain SGD), hetsgd against PyTorch on this machine, pair by
# pair. Usage:
#
#   bench/peer_step.sh [PAIRS] [SHAPE]
#
# Each pair runs, back to back: `hetsgd step` (the default build), the same
# command built with -tags openblas, and bench/torch_step.py in its two best
# configurations on these machines (OpenBLAS with one or two threads under
# PyTorch's two). It prints every pair and the medians: step times, the
# speed-up over the better PyTorch run of the pair, and each hetsgd build's
# step against the roofline of its own SGEMM peak measured in the same run.
# Installs Debian's python3-torch and OpenBLAS (and libopenblas-dev for the
# openblas build) when they are missing (needs root and apt).
set -euo pipefail
pairs=${1:-3}
shape=${2:-amazon-670k}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out/peer-step}
py=/usr/bin/python3
need=()
"$py" -c 'import torch' 2>/dev/null || need+=(python3-torch python3-numpy)
[ -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ] || need+=(libopenblas0-pthread)
[ -e /usr/include/x86_64-linux-gnu/cblas.h ] || need+=(libopenblas-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# OpenBLAS mis-detects AVX-512 AMD cores and takes its Haswell kernels; both
# hetsgd's openblas build and PyTorch get the SkylakeX ones here.
if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
mkdir -p "$out"
(cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd && go build -tags openblas -o "$out/hetsgd-openblas" ./cmd/hetsgd)
json() { tail -n 1; }
for i in $(seq 1 "$pairs"); do
  "$out/hetsgd" step --like "$shape" --steps 5 | json >"$out/pair$i-hetsgd.json"
  "$out/hetsgd-openblas" step --like "$shape" --steps 5 | json >"$out/pair$i-hetsgd-openblas.json"
  OPENBLAS_NUM_THREADS=1 "$py" "$root/bench/torch_step.py" --like "$shape" --steps 5 >"$out/pair$i-torch-blas1.json"
  OPENBLAS_NUM_THREADS=2 "$py" "$root/bench/torch_step.py" --like "$shape" --steps 5 >"$out/pair$i-torch-blas2.json"
done
"$py" - "$out" "$pairs" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
load = lambda name: json.load(open(f"{out}/{name}.json"))
rows = []
print(f"{'pair':>4} {'hetsgd ms':>10} {'roofline':>9} {'openblas ms':>12} {'roofline':>9} {'torch ms':>9} {'speed-up':>9} {'openblas':>9}")
for i in range(1, pairs + 1):
    h, o = load(f"pair{i}-hetsgd"), load(f"pair{i}-hetsgd-openblas")
    t = min(load(f"pair{i}-torch-blas1")["step_ms"], load(f"pair{i}-torch-blas2")["step_ms"])
    r = dict(h=h["step_ms"]["fused"], hr=h["step_ms"]["fused"] / h["roofline_ms"], hp=h["sgemm_peak_gflops"],
             o=o["step_ms"]["fused"], orr=o["step_ms"]["fused"] / o["roofline_ms"], op=o["sgemm_peak_gflops"], t=t)
    rows.append(r)
    print(f"{i:>4} {r['h']:>10.1f} {r['hr']:>8.2f}× {r['o']:>12.1f} {r['orr']:>8.2f}× {t:>9.1f} {t / r['h']:>8.2f}× {t / r['o']:>8.2f}×")
med = lambda k: statistics.median(r[k] for r in rows)
print(f"median: hetsgd {med('h'):.1f} ms ({med('hr'):.2f}× the roofline of its {med('hp'):.0f} GFLOP/s SGEMM peak), "
      f"openblas build {med('o'):.1f} ms ({med('orr'):.2f}× of {med('op'):.0f} GFLOP/s), PyTorch {med('t'):.1f} ms; "
      f"speed-up {statistics.median(r['t'] / r['h'] for r in rows):.2f}× (default build), "
      f"{statistics.median(r['t'] / r['o'] for r in rows):.2f}× (openblas build)")
PY
