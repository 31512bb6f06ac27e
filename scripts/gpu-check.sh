#!/bin/sh
# The GPU check: the GPU backend's evidence from a machine with an NVIDIA
# GPU, gathered in one run of a few minutes. Two halves, since such a
# machine need not have Go:
#
#   scripts/gpu-check.sh build [DIR]
#       where Go is (no CUDA needed): builds the tool with the GPU backend
#       (-tags cuda, CGO_ENABLED=0) and the test binaries of packages cuda
#       and gpu into DIR (default out/gpu-check), with this script.
#   DIR/gpu-check.sh run [PEER]
#       on the GPU machine, in one call: the GPUs the tool finds; every
#       kernel and product against its pure-Go reference, and train
#       --backend gpu against the CPU (HETSGD_GPU_TEST=real); a run
#       checkpointed on the GPU and resumed on the CPU; one epoch of the
#       Amazon-670K-like set (data gen --like amazon-670k --points 60000
#       --seed 3) on the GPU,
#       with its samples a second and P@1; beside it, when PEER names the
#       PyTorch peer (torch_gpu_peer.py), the peer on the same files, fp32.
#       It ends with one summary. HETSGD_CUDA_DRIVER and HETSGD_CUDA_LIBS
#       say where CUDA's libraries are when they are not found.
set -u

build() {
  dir=${1:-out/gpu-check}
  mkdir -p "$dir" || exit 1
  CGO_ENABLED=0 go build -tags cuda -o "$dir/hetsgd" ./cmd/hetsgd &&
    CGO_ENABLED=0 go test -c -tags cuda -o "$dir/cuda.test" ./cuda &&
    CGO_ENABLED=0 go test -c -tags cuda -o "$dir/gpu.test" ./gpu &&
    cp scripts/gpu-check.sh "$dir/gpu-check.sh" || exit 1
  echo "built into $dir: run $dir/gpu-check.sh run [PEER] on the GPU machine"
}

run() {
  here=$(cd "$(dirname "$0")" && pwd)
  peer=${1:-}
  work=$(mktemp -d) || exit 1
  trap 'rm -rf "$work"' EXIT
  trap 'status=interrupted; summary; exit 130' INT TERM
  status=ok
  step() { echo; echo "== $*"; }
  fail() { echo "FAILED: $*"; status=failed; }

  step "hetsgd gpus"
  "$here/hetsgd" gpus || { fail "no GPU found"; summary; exit 1; }

  step "kernels and products against their references (package cuda, package gpu)"
  (cd "$work" && HETSGD_GPU_TEST=real "$here/cuda.test" -test.v -test.count=1) >"$work/cuda.log" 2>&1 || fail "package cuda's tests"
  grep -E '^(--- |ok|FAIL|PASS)' "$work/cuda.log"
  (cd "$work" && HETSGD_GPU_TEST=real "$here/gpu.test" -test.v -test.count=1 -test.run 'Gradient|Step|Optimizers|Load|Dropout|TrainOnGPU') >"$work/gpu.log" 2>&1 || fail "package gpu's tests"
  grep -E '^(--- |ok|FAIL|PASS)' "$work/gpu.log"
  grep -B2 -A12 -E '^--- FAIL' "$work/cuda.log" "$work/gpu.log" | head -60

  step "a resume across backends (Bibtex: half an epoch on the GPU, the rest on the CPU, against the CPU throughout)"
  t="$here/hetsgd train --time virtual --eval-every 0.25 --progress off"
  (cd "$work" && $t --epochs 1 >whole.log 2>&1 &&
    $t --epochs 0.5 --backend gpu --checkpoint ck >half.log 2>&1 &&
    "$here/hetsgd" train --resume ck --backend cpu --epochs 1 --progress off >resumed.log 2>&1) || fail "the resume across backends"
  p_whole=$(awk '$1 == "epoch" && $5 == "P@1" { p = $6 } END { print p }' "$work/whole.log")
  p_resumed=$(awk '$1 == "epoch" && $5 == "P@1" { p = $6 } END { print p }' "$work/resumed.log")
  echo "P@1 after one epoch: on the CPU throughout $p_whole; half on the GPU, resumed on the CPU $p_resumed"
  awk -v a="$p_whole" -v b="$p_resumed" 'BEGIN { d = a - b; if (a == "" || b == "" || d > 0.01 || d < -0.01) exit 1 }' || fail "the resumed run's P@1 is not the whole run's"

  step "the Amazon-670K-like set (60,000 points, seed 3)"
  "$here/hetsgd" data gen --like amazon-670k --points 60000 --seed 3 --out "$work/a670k" --progress off >/dev/null || fail "data gen"

  step "one epoch on the GPU (hidden 128, batch 256, Adam 1e-3)"
  (cd "$work" && HETSGD_GPU_TEST=real HETSGD_GPU_SET="$work/a670k" "$here/gpu.test" -test.v -test.count=1 -test.run EpochOnASet -test.timeout 4m) >"$work/epoch.log" 2>&1 || fail "the epoch"
  grep -E 'epoch:|^--- |FAIL|panic' "$work/epoch.log"

  if [ -n "$peer" ]; then
    step "the PyTorch peer on the same files (fp32, one epoch)"
    python3 "$peer" "$work/a670k/train.txt" "$work/a670k/test.txt" --device cuda --precision fp32 --epochs 1 >"$work/peer.log" 2>&1 || fail "the peer"
    tail -5 "$work/peer.log"
  fi
  summary
}

summary() {
  echo
  echo "== summary: $status"
  grep -h -o 'epoch: .*' "$work/epoch.log" 2>/dev/null | sed 's/^/hetsgd on the GPU: /'
  [ -n "${peer:-}" ] && grep -h '^{' "$work/peer.log" 2>/dev/null | tail -2 | sed 's/^/PyTorch: /'
  [ -n "${p_whole:-}" ] && echo "resume across backends: P@1 $p_whole throughout on the CPU, $p_resumed half on the GPU"
  echo "tests: $(cat "$work"/cuda.log "$work"/gpu.log 2>/dev/null | grep -c '^--- PASS') passed, $(cat "$work"/cuda.log "$work"/gpu.log 2>/dev/null | grep -c '^--- FAIL') failed, $(cat "$work"/cuda.log "$work"/gpu.log 2>/dev/null | grep -c '^--- SKIP') skipped"
}

case "${1:-}" in
build) shift; build "$@" ;;
run) shift; run "$@" ;;
*) echo "usage: $0 build [DIR] | run [PEER]" >&2; exit 2 ;;
esac
