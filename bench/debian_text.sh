#!/usr/bin/env bash
# Text in, on a corpus nobody here wrote (BENCHMARKS.md §22): Debian's
# package descriptions with their debtags as labels. Builds the corpus,
# vectorizes it with hetsgd data from-text and with scikit-learn's
# TfidfVectorizer (bench/sklearn_text.py) in alternating rounds, compares
# the two sets, trains hetsgd on each with the same settings, and serves
# hetsgd's model to text requests (bench/serveload --text).
#
#   bench/debian_text.sh OUT
#
# Fetching the lists needs root and the Debian archive: they go into
# OUT/apt, not the system's lists (apt-get update with Acquire::Languages=en
# fetches the Translation-en files that hold the long descriptions). The
# archive moves, so the corpus's size is printed with the figures.
#
# Env: BIN (the hetsgd binary, default ./hetsgd), PY (a python3 with
# scikit-learn, default /usr/bin/python3), ROUNDS (timed rounds, default 5),
# EPOCHS (default 5).
set -euo pipefail
. "$(dirname "$0")/serve_lib.sh"
out=${1:?usage: bench/debian_text.sh OUT}
bin=${BIN:-./hetsgd}
py=${PY:-/usr/bin/python3}
mkdir -p "$out/apt/lists/partial"
if [ ! -s "$out/corpus/train.tsv" ]; then
  apt-get update -o Dir::State::Lists="$out/apt/lists" -o Acquire::Languages=en > "$out/apt/update.log"
  apt-cache -o Dir::State::Lists="$out/apt/lists" dumpavail > "$out/apt/avail.txt"
  for f in "$out"/apt/lists/*_i18n_Translation-en*; do /usr/lib/apt/apt-helper cat-file "$f"; done > "$out/apt/translation.txt"
  rm -rf "$out/corpus"
  go run ./bench/debcorpus --avail "$out/apt/avail.txt" --translations "$out/apt/translation.txt" --out "$out/corpus"
fi
echo "{\"corpus_bytes\": $(cat "$out"/corpus/*.tsv | wc -c), \"cores\": $(nproc)}"

# Alternating rounds, so that both meet the same load.
for r in $(seq "${ROUNDS:-5}"); do
  hx=$("$bin" data from-text --train "$out/corpus/train.tsv" --test "$out/corpus/test.tsv" --out "$out/hx" --force | sed -n 's/^read \([0-9.]*\) s, vectorized \([0-9.]*\) s, wrote \([0-9.]*\) s$/{"read_s": \1, "vectorize_s": \2, "write_s": \3}/p')
  sk=$("$py" bench/sklearn_text.py "$out/corpus/train.tsv" "$out/corpus/test.tsv" -)
  echo "{\"round\": $r, \"hetsgd\": $hx, \"sklearn\": $sk}"
done
"$py" bench/sklearn_text.py "$out/corpus/train.tsv" "$out/corpus/test.tsv" "$out/sk" > /dev/null

# The two sets, entry by entry: the same columns and labels, values within
# float32's rounding.
"$py" - "$out/hx" "$out/sk" <<'PY'
import json, sys
worst, rows = 0.0, 0
for split in ("train.txt", "test.txt"):
    with open(f"{sys.argv[1]}/{split}") as a, open(f"{sys.argv[2]}/{split}") as b:
        assert a.readline() == b.readline(), "headers differ"
        for la, lb in zip(a, b):
            ya, *fa = la.split(" ")
            yb, *fb = lb.split(" ")
            assert ya == yb, f"labels differ in row {rows}"
            da = dict(f.split(":") for f in fa if f.strip())
            db = dict(f.split(":") for f in fb if f.strip())
            assert da.keys() == db.keys(), f"columns differ in row {rows}"
            worst = max([worst] + [abs(float(da[k]) - float(db[k])) for k in da])
            rows += 1
print(json.dumps({"rows_compared": rows, "max_abs_diff": worst}))
PY

rm -rf "$out/ck"
for set in hx sk; do
  ck=()
  [ "$set" = hx ] && ck=(--checkpoint "$out/ck")
  "$bin" train --data "$out/$set" --epochs "${EPOCHS:-5}" --progress off --log "$out/$set.jsonl" --force "${ck[@]}" 2>/dev/null | grep '^best' | sed "s/^/$set: /"
done

# The text model served: single-text requests of the test file's texts,
# vectorized by the server, at concurrency 1 and 64.
serve_model "$out" --model "$out/ck"
go run ./bench/serveload --url "$url" --text "$out/corpus/test.tsv" --concurrency 1 --requests 500 --warmup 20
go run ./bench/serveload --url "$url" --text "$out/corpus/test.tsv" --concurrency 64 --requests 3000 --warmup 64
