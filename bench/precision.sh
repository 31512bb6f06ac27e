#!/usr/bin/env bash
# fp32 against bf16 products (issue 48): one epoch of Bibtex, Delicious and
# the Amazon-670K-like 60k set with the dense output layer, once at each
# --precision, the same seed; then the dense training step at the
# Amazon-670K shape at both precisions side by side (hetsgd step
# --precision both, Adam). Prints each set's best P@1 and samples/s at both
# precisions, and the step's ratio. Usage:
#
#   bench/precision.sh DATA_DIR [OUT_DIR]
#
# DATA_DIR holds bibtex/ and delicious/ (train.txt, test.txt; XC format).
# The 60k set is made in OUT_DIR/amz60k when missing (data gen --like
# amazon-670k --points 60000 --seed 3). EVAL_POINTS (default 5000) bounds
# the 60k set's evaluation. On a CPU without AVX512-BF16, bf16 runs in
# float32 and says so. Nothing else should run on the machine meanwhile.
set -euo pipefail
data=${1:?usage: bench/precision.sh DATA_DIR [OUT_DIR]}
out=${2:-out/precision}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd)
h="$out/hetsgd"
[ -f "$out/amz60k/train.txt" ] || "$h" data gen --like amazon-670k --points 60000 --seed 3 --out "$out/amz60k" >/dev/null

sets=(bibtex delicious amz60k)
for set in "${sets[@]}"; do
  dir="$data/$set"
  extra=()
  if [ "$set" = amz60k ]; then dir="$out/amz60k"; extra=(--eval-points "${EVAL_POINTS:-5000}"); fi
  for p in fp32 bf16; do
    "$h" train --data "$dir" --epochs 1 --precision "$p" "${extra[@]}" \
      --progress off --log "$out/$set-$p.jsonl" --force >"$out/$set-$p.txt" 2>&1
  done
done
"$h" step --like amazon-670k --optimizer adam --steps 3 --precision both >"$out/step.txt" 2>&1

python3 - "$out" "${sets[@]}" <<'PY'
import json, sys
out, sets = sys.argv[1], sys.argv[2:]
def run(name):
    ev = [json.loads(l) for l in open(f"{out}/{name}.jsonl")]
    kernel = next(e for e in ev if e.get("event") == "config").get("kernel", "?")
    evals = [e for e in ev if e.get("event") == "eval"]
    best = max(e["p1"] for e in evals)
    last = evals[-1]
    return best, last["samples"] / last["train_seconds"], kernel
print(f"{'set':>10} {'fp32 P@1':>9} {'bf16 P@1':>9} {'diff':>7} {'fp32 samples/s':>15} {'bf16 samples/s':>15} {'x':>5}  kernels")
for s in sets:
    p32, v32, k32 = run(f"{s}-fp32")
    p16, v16, k16 = run(f"{s}-bf16")
    print(f"{s:>10} {p32:>9.4f} {p16:>9.4f} {p16-p32:>+7.4f} {v32:>15.0f} {v16:>15.0f} {v16/v32:>5.2f}  {k32}, {k16}")
ms = json.loads(open(f"{out}/step.txt").read().strip().splitlines()[-1])["step_ms"]
if "fused-bf16" in ms:
    print(f"dense step at the Amazon-670K shape (Adam): fp32 {ms['fused']:.0f} ms, bf16 {ms['fused-bf16']:.0f} ms: "
          f"{ms['fused']/ms['fused-bf16']:.2f}x (split: {ms['split']/ms['split-bf16']:.2f}x)")
PY
