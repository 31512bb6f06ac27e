#!/usr/bin/env bash
# Time-to-accuracy of hetsgd against the PyTorch peer (bench/torch_xml.py) on
# Bibtex and Delicious, run by run on this machine. Usage:
#
#   bench/peer_xml.sh DATA_DIR [OUT_DIR]
#
# DATA_DIR holds bibtex/ and delicious/ (train.txt, test.txt in XC format).
# Installs Debian's python3-torch and OpenBLAS when they are missing (needs
# root and apt).
#
# PyTorch runs in its best measured configuration on this machine kind:
# Debian's torch calls the system BLAS, which is the slow reference BLAS
# unless OpenBLAS is installed; OpenBLAS mis-detects the core type of these
# CPUs (OPENBLAS_CORETYPE=SkylakeX fixes it); and its own thread pool fights
# PyTorch's OpenMP threads on small matrices, so OpenBLAS gets one thread and
# PyTorch two. bench/torch_xml.py --help lists the model's settings.
set -euo pipefail
data=${1:?usage: bench/peer_xml.sh DATA_DIR [OUT_DIR]}
out=${2:-out/peer-xml}
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
if ! "$py" -c 'import torch' 2>/dev/null || ! ls /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 >/dev/null 2>&1; then
  echo "installing python3-torch and OpenBLAS from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-numpy libopenblas0-pthread >/dev/null
fi
export OPENBLAS_NUM_THREADS=1
if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd)
declare -A target=([bibtex]=0.63 [delicious]=0.655)
for set in bibtex delicious; do
  logs=()
  for seed in 1 2 3; do
    # hetsgd with its defaults (hidden 128, dropout 0.2, Adam 1e-3, batch 128).
    l="$out/$set-hetsgd-default-s$seed.jsonl"
    "$out/hetsgd" train --data "$data/$set" --seed "$seed" --progress off --log "$l" --force >/dev/null
    logs+=("$l")
    # The same model as the PyTorch reference: hidden 256, no dropout.
    l="$out/$set-hetsgd-h256-s$seed.jsonl"
    "$out/hetsgd" train --data "$data/$set" --hidden 256 --dropout 0 --seed "$seed" --progress off --log "$l" --force >/dev/null
    logs+=("$l")
    l="$out/$set-torch-h256-s$seed.jsonl"
    "$py" "$root/bench/torch_xml.py" --data "$data/$set" --hidden 256 --dropout 0 --seed "$seed" --epochs 20 > "$l"
    logs+=("$l")
    l="$out/$set-torch-default-s$seed.jsonl"
    "$py" "$root/bench/torch_xml.py" --data "$data/$set" --hidden 128 --dropout 0.2 --seed "$seed" --epochs 20 > "$l"
    logs+=("$l")
  done
  echo "## $set"
  "$py" "$root/bench/summarize.py" "${target[$set]}" "${logs[@]}"
  echo
done
