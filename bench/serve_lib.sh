# Sourced by the serving benchmarks (bench/serve.sh, bench/debian_text.sh).
#
# serve_model OUT ARGS...: starts "$bin serve ARGS" on a free loopback
# port, its output in OUT/serve.out and OUT/serve.err, stopped when the
# script exits, and sets url to its /predict once it listens.
serve_model() {
  local out=$1
  shift
  "$bin" serve "$@" --addr 127.0.0.1:0 --reload 0 > "$out/serve.out" 2> "$out/serve.err" &
  serve_pid=$!
  trap 'kill -INT $serve_pid 2>/dev/null; wait $serve_pid 2>/dev/null || true' EXIT
  until url=$(grep -o 'http://[^ ]*/predict' "$out/serve.out" 2>/dev/null); do
    kill -0 "$serve_pid" || { cat "$out/serve.err"; exit 1; }
    sleep 0.2
  done
}
