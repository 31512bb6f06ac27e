#!/usr/bin/env bash
# Serving at the Amazon-670K shape (BENCHMARKS.md §21): hetsgd serve's
# latency at concurrency 1 and its batched throughput against hetsgd
# predict's on the same model and points.
#
#   bench/serve.sh OUT
#
# Env: BIN (the hetsgd binary, default ./hetsgd), POINTS (generated training
# points, default 60000), REQUESTS (timed requests a run, default 300),
# CONC (the batched run's concurrency, default 64), EPOCHS (of training,
# default 0.01), OUTPUT (the model's output layer in training: dense, the
# default, or lsh), RANK (how serve ranks: exact, the default, or tables;
# with tables, eval first reports what the tables cost on the test set:
# their recall and P@k against the exact ranking's), LSH (more flags of
# serve's and eval's --rank tables, e.g. "--lsh-k 4 --lsh-active 0.02").
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
out=${1:?usage: bench/serve.sh OUT}
bin=${BIN:-./hetsgd}
mkdir -p "$out"
[ -d "$out/amz" ] || "$bin" data gen --like amazon-670k --points "${POINTS:-60000}" --out "$out/amz" > /dev/null
output=${OUTPUT:-dense}
rank=${RANK:-exact}
ck="$out/ck"
[ "$output" = dense ] && [ -z "${EPOCHS:-}" ] || ck="$out/ck-$output-${EPOCHS:-0.01}"
[ -d "$ck" ] || "$bin" train --data "$out/amz" --epochs "${EPOCHS:-0.01}" --eval-points 100 --output "$output" --checkpoint "$ck" --progress off > /dev/null
if [ "$rank" = tables ]; then
  for r in exact tables; do
    echo "{\"eval_rank\": \"$r\", \"scores\": $("$bin" eval --model "$ck" --data "$out/amz" --eval-points 2000 --rank "$r" $([ "$r" = tables ] && echo ${LSH:-}) --json)}"
  done
fi
load() { go run ./bench/serveload --url "$1" --data "$out/amz" "${@:2}"; }

# predict: every test point, in its chunks.
rm -f "$out/top5.tsv"
start=$(date +%s.%N)
"$bin" predict --model "$ck" --data "$out/amz" --top 5 --out "$out/top5.tsv"
end=$(date +%s.%N)
n=$(wc -l < "$out/top5.tsv")
echo "{\"predict_points\": $n, \"predict_seconds\": $(echo "$end - $start" | bc), \"predict_points_per_s\": $(echo "$n / ($end - $start)" | bc -l)}"

serve_model "$out" --model "$ck" --rank "$rank" $([ "$rank" = tables ] && echo ${LSH:-})
load "$url" --concurrency 1 --requests "${REQUESTS:-300}" --warmup 20
load "$url" --concurrency "${CONC:-64}" --requests "$(( ${REQUESTS:-300} * 10 ))" --warmup 64
