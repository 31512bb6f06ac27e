#!/bin/sh
# The grid behind every strategy's default optimizer, learning rate and batch
# (BENCHMARKS.md §8): each strategy on 4 devices under the virtual clock,
# 10 epochs, at the powers of ten and half steps of the learning rate, for
# Adam and for SGD, at three batch sizes, on a data set.
#
#   bench/tune_grid.sh OUT [--data DIR]      (default: the bundled Bibtex)
#
# writes OUT/adam.txt, OUT/sgd.txt and their JSON Lines logs. BATCHES,
# ADAM_LRS and SGD_LRS narrow the grid (default 64,128,256, 1e-4:0.1 and
# 0.01:10).
set -eu
batches=${BATCHES:-64,128,256}
adam=${ADAM_LRS:-1e-4:0.1}
sgd=${SGD_LRS:-0.01:10}
out=$1
shift
mkdir -p "$out"
go build -o "$out/hetsgd" ./cmd/hetsgd
"$out/hetsgd" tune --optimizer adam --lrs "$adam" --batches "$batches" --epochs 10 \
	--progress off --log "$out/adam.jsonl" --force "$@" | tee "$out/adam.txt"
"$out/hetsgd" tune --optimizer sgd --lrs "$sgd" --batches "$batches" --epochs 10 \
	--progress off --log "$out/sgd.jsonl" --force "$@" | tee "$out/sgd.txt"
