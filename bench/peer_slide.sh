#!/usr/bin/env bash
# SLIDE's own C++ code against hetsgd's slide strategy on the same data and
# settings, P@1 per epoch side by side. Usage:
#
#   bench/peer_slide.sh CHECKOUT DATA_DIR [OUT_DIR]
#
# CHECKOUT is a checkout of SLIDE's code (github.com/keroro824/
# HashingDeepLearning, the folder holding SLIDE/main.cpp); this script
# fetches nothing. DATA_DIR holds train.txt and test.txt in the XC text
# format (a header "points features labels", then "l1,l2 f:v f:v" lines),
# which SLIDE's reader takes as they are. EPOCHS (default 20) epochs each;
# LR (default 1e-4, SLIDE's Config_amz.csv and slide's default) Adam's rate.
# For sets where an epoch takes hours here (Amazon-670K's size): STEPS
# evaluates every STEPS batches as well, on the first 20 test batches (2,560
# points; SLIDE's own mid-epoch evaluation, and hetsgd's --eval-points then),
# and LIMIT stops each run after that many seconds (SLIDE's whole run by
# the clock, hetsgd's training seconds by --time-budget). PEER_ONLY=1 runs
# SLIDE's code alone (for a long run of it beside a hetsgd run made before).
#
# The build works on a copy in OUT_DIR/slide-src and says what it changes
# there: SLIDE's CMake build clones zlib and cnpy from GitHub and its
# Makefile wants g++-7 and cnpy under /slide, so the copy is compiled with
# the system's g++ directly, against a stand-in for cnpy (SLIDE uses it only
# to load weights, off in its Config.h, and to save them after each epoch,
# which the copy then skips). Debian's g++ is installed with apt-get when
# missing (needs root).
#
# Settings. Delicious (983 labels) gets the SLIDE setting reported for it:
# Simhash (HashFunction 4 in SLIDE/Config.h, a compile-time constant) with
# K 9, L 50, RangePow 9; other data SLIDE's Amazon-670K config: DWTA
# (HashFunction 2), K 6, L 50, RangePow 18. Both: hidden layer 128 (ReLU),
# batch 128, Adam, tables rehashed every 6,400 samples and rebuilt every
# 128,000 (Config_amz.csv), output Sparsity 0.005 (which SLIDE's sampling
# mode reads only as "sample this layer"), every label scored at test.
# hetsgd gets the same: --strategy slide with its defaults (which pick
# SLIDE's hashing for the data set from its label count), --hidden 128,
# --dropout 0 (SLIDE has none), and scores the same test points: SLIDE
# scores whole batches of 128, the first floor(test/128)·128 points.
set -euo pipefail
usage="usage: bench/peer_slide.sh CHECKOUT DATA_DIR [OUT_DIR]"
checkout=${1:?$usage}
data=${2:?$usage}
out=${3:-out/peer-slide}
epochs=${EPOCHS:-20}
lr=${LR:-0.0001}
steps=${STEPS:-0}
limit=${LIMIT:-0}
peer_only=${PEER_ONLY:-0}
root=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -f "$checkout/SLIDE/main.cpp" ]; then
  echo "peer_slide: no SLIDE checkout at $checkout (want its SLIDE/main.cpp); this script fetches nothing: give the path of a HashingDeepLearning checkout" >&2
  exit 2
fi
for f in train.txt test.txt; do
  if [ ! -f "$data/$f" ]; then
    echo "peer_slide: no $f in $data (want train.txt and test.txt in the XC text format)" >&2
    exit 2
  fi
done
if ! command -v g++ >/dev/null; then
  echo "peer_slide: installing Debian's g++" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
data=$(cd "$data" && pwd)
read -r train_n features labels < <(head -1 "$data/train.txt")
read -r test_n _ _ < <(head -1 "$data/test.txt")
test_scored=$((test_n / 128 * 128))

if [ "$labels" = 983 ]; then
  name=Delicious hashfn=4 k=9 l=50 range=9
else
  name="Amazon-670K's (the config SLIDE ships)" hashfn=2 k=6 l=50 range=18
fi
echo "data: $data: $train_n training points, $features features, $labels labels; SLIDE's setting: $name (HashFunction $hashfn, K $k, L $l, RangePow $range)"

# --- SLIDE, built from a copy of the checkout.
src="$out/slide-src"
rm -rf "$src"
cp -r "$checkout" "$src"
chmod -R u+w "$src"
cd "$src/SLIDE"
echo "build changes to the copy in $src:"
cat > cnpy.h <<'EOF'
// A stand-in for cnpy, written by bench/peer_slide.sh: SLIDE loads weights
// only with LOADWEIGHT set (0 in Config.h) and saves them after each epoch;
// this copy loads none and saves none.
#pragma once
#include <map>
#include <string>
#include <vector>
namespace cnpy {
struct NpyArray {
  template <typename T> T *data() { return nullptr; }
};
typedef std::map<std::string, NpyArray> npz_t;
inline npz_t npz_load(std::string) { return npz_t(); }
template <typename T>
void npz_save(std::string, std::string, const T *, const std::vector<size_t>, std::string = "w") {}
}
EOF
echo "  - cnpy.h: a stand-in for cnpy (not fetched): no weights loaded (LOADWEIGHT is 0) or saved"
sed -i "s/^#define HashFunction .*/#define HashFunction $hashfn/" Config.h
echo "  - Config.h: HashFunction $hashfn (was $(grep -h '^#define HashFunction' "$checkout/SLIDE/Config.h" | awk '{print $3}'))"
# After each epoch but the last SLIDE scores 50 test batches of 128; a test
# set of fewer points runs its reader past the file's end into batches it
# never filled. Every epoch scores the whole test set's batches instead,
# as the last one does.
sed -i 's/EvalDataSVM(50, _mynet/EvalDataSVM(numBatchesTest, _mynet/' main.cpp
echo "  - main.cpp: every epoch scores all $((test_n / 128)) full test batches ($test_scored points), as its last epoch does (it scored 50 batches, more than the test set holds)"
flags="-std=c++11 -fno-strict-aliasing -O3 -fopenmp -mtune=intel"
if grep -q avx2 /proc/cpuinfo; then flags="$flags -mavx2"; fi
echo "  - compiled with the system's g++ $flags (its Makefile: g++-7, cnpy under /slide; its CMake build clones zlib and cnpy)"
if ! g++ $flags -I. -o runme ./*.cpp > "$out/slide-build.log" 2>&1; then
  echo "peer_slide: SLIDE does not build here (g++ $(g++ -dumpversion)); the compiler says (all of it in $out/slide-build.log):" >&2
  grep -m 20 -i error "$out/slide-build.log" >&2 || tail -20 "$out/slide-build.log" >&2
  exit 1
fi
cd "$out"

cfg="$out/slide-config.csv"
log="$out/slide-log.txt"
rm -f "$log"
# Stepsize: batches between mid-epoch evaluations (without STEPS none but
# the one before the first batch).
stepsize=1000000000
mid=""
if [ "$steps" -gt 0 ]; then
  stepsize=$steps
  mid=", and every $steps batches on its first 20 test batches (2,560 points)"
fi
cat > "$cfg" <<EOF
RangePow = 6,$range
K = 2,$k
L = 20,$l
Sparsity = 1,0.005,1,1
Batchsize=128
Rehash=6400
Rebuild=128000
InputDim=$features
totRecords=$train_n
totRecordsTest=$test_n
Lr=$lr
Epoch=$epochs
Stepsize=$stepsize
sizesOfLayers=128,$labels
numLayer=2
trainData=$data/train.txt
testData=$data/test.txt
weight=$out/slide-weights.npz
savedweight=$out/slide-weights.npz
logFile=$log
EOF
threads=$(nproc)
echo
echo "## SLIDE's code: $epochs epochs, Adam $lr, batch 128, $threads threads (OMP_NUM_THREADS), P@1 after each epoch$mid"
start=$(date +%s)
run=("$src/SLIDE/runme" "$cfg")
if [ "$limit" -gt 0 ]; then
  run=(timeout --signal=TERM "$limit" "${run[@]}")
  echo "limit: $limit wall seconds"
fi
status=0
# Each line of SLIDE's output gets the wall seconds since its start: it
# prints a line at every rehash (every 50 batches), so its training speed
# shows between evaluations, which on a large label set take minutes.
set +o pipefail
OMP_NUM_THREADS=$threads "${run[@]}" 2>&1 | while IFS= read -r line || [ -n "$line" ]; do printf '%6d %s\n' "$(($(date +%s) - start))" "$line"; done > "$out/slide-stdout.txt"
status=${PIPESTATUS[0]}
set -o pipefail
if [ "$status" -ne 0 ] && ! [ "$limit" -gt 0 -a "$status" -eq 124 ]; then
  echo "peer_slide: SLIDE's run failed (exit $status); its output is in $out/slide-stdout.txt" >&2
  tail -5 "$out/slide-stdout.txt" >&2
  exit 1
fi
[ "$status" -eq 124 ] && echo "stopped by LIMIT"
echo "wall seconds: $(($(date +%s) - start)) (training and evaluation)"
# Batches trained, from the rehash lines (SLIDE rehashes in its 50th
# batch of every 50, and prints then), and when each came.
awk '/Avg sample size/ { n++; printf "batch %d (%d samples) at %d wall s\n", 50 * n, 6400 * n, $1 }' "$out/slide-stdout.txt" | tee "$out/slide-batches.txt" | tail -3
# Its log holds "iter train_s P@1" after each evaluation: the one at
# iteration e·batches ends epoch e; with STEPS, those between are
# mid-epoch evaluations on 2,560 points.
batches=$((train_n / 128))
# An iteration logged twice is an epoch's end and then, with STEPS, the
# next epoch's first mid-epoch evaluation.
awk -v b="$batches" 'NF == 3 && $1 > 0 && $1 % b == 0 && !seen[$1]++ { printf "epoch %d  P@1 %.4f  train s %d\n", $1 / b, $3, $2; next }
  NF == 3 && $1 > 0 { printf "epoch %.3f  P@1 %.4f  train s %d  (%d samples, 2,560 test points)\n", $1 / b, $3, $2, $1 * 128 }' "$log" | tee "$out/slide-p1.txt"

if [ "$peer_only" = 1 ]; then
  echo "PEER_ONLY=1: hetsgd's slide not run"
  exit 0
fi

# --- hetsgd's slide, the same settings.
(cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd)
echo
echo "## hetsgd train --strategy slide: $epochs epochs, Adam $lr, batch 128"
hlog="$out/hetsgd-slide.jsonl"
points=$test_scored
extra=()
if [ "$steps" -gt 0 ]; then
  points=2560
  extra+=(--eval-every "$(awk -v s="$steps" -v b="$batches" 'BEGIN { printf "%.6g", s / b }')")
fi
if [ "$limit" -gt 0 ]; then
  extra+=(--time-budget "$limit")
fi
rm -f "$hlog"
set -x
"$out/hetsgd" train --strategy slide --data "$data" --hidden 128 --dropout 0 --lr "$lr" --epochs "$epochs" \
  --eval-points "$points" --seed 1 --progress off --log "$hlog" "${extra[@]}" > "$out/hetsgd-stdout.txt"
{ set +x; } 2>/dev/null
python3 - "$hlog" <<'EOF' | tee "$out/hetsgd-p1.txt"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") == "eval" and r["epoch"] > 0:
        print(f"epoch {r['epoch']:.3g}  P@1 {r['p1']:.4f}  train s {r['train_seconds']:.0f}  ({r['samples']} samples)")
EOF
echo
best() { awk '{ if ($4 > b) b = $4 } END { printf "%.4f", b }' "$1"; }
note=""
[ "$steps" -gt 0 ] && note=" (with STEPS, SLIDE's epoch ends score $test_scored test points and every other evaluation 2,560)"
echo "best P@1: SLIDE's code $(best "$out/slide-p1.txt"), hetsgd slide $(best "$out/hetsgd-p1.txt")$note"
