#!/usr/bin/env bash
# Distributed training over OpenMPI on this host, against the in-process
# engine, for BENCHMARKS.md §7. Usage:
#
#   bench/mpi.sh SECTION [DATA_DIR]
#
# SECTION is one of
#   collectives  the Go layer's all-reduce against OpenMPI's own loop, 4 and
#                64 MB, 2 and 4 ranks, ranks pinned to cores and not (5 runs
#                of hetsgd calibrate --network each; medians)
#   throughput   samples/s of sync and lsgd on 1, 2, 4 ranks against one
#                process with as many devices, Bibtex and Delicious (5
#                interleaved rounds; medians)
#   overlap      Layered SGD on 2 ranks as 2 nodes, Delicious, with and
#                without preparing the next batch during the nodes'
#                all-reduce, with no data preparation and with 10 µs a sample
#                of simulated decoding (6 runs each; medians)
#   bars         the issue's bars: best P@1 in 3 epochs on Bibtex, 4 ranks
#                against one process with 4 devices
#   ps           the parameter servers' samples/s and staleness on 2 and 4
#                ranks against one process
#   network      the links of this host measured (shared memory, and TCP over
#                loopback), and the Layered SGD study fed with them
#   all          every section
#
# DATA_DIR holds delicious/ (default: $HETSGD_DATA, else ../shared/data beside
# the repository). Builds the tool with and without the tag mpi into $OUT
# (default out/mpi); installs Debian's OpenMPI when missing (needs root and
# apt). Every rank stays on shared memory and loopback.
set -euo pipefail
section=${1:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
data=${2:-${HETSGD_DATA:-$root/../shared/data}}
out=${OUT:-$root/out/mpi}
mkdir -p "$out"
if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi-c 2>/dev/null; then
  echo "installing OpenMPI from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenmpi-dev openmpi-bin pkg-config >/dev/null
fi
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
(cd "$root" && go build -o "$out/hetsgd" ./cmd/hetsgd && go build -tags mpi -o "$out/hetsgd-mpi" ./cmd/hetsgd)
one="$out/hetsgd"
mpi="$out/hetsgd-mpi"
local_flags=(--mca btl self,vader --mca oob_tcp_if_include lo)
unbound=(--bind-to none --oversubscribe "${local_flags[@]}")

# samples/s of a run log; a field of its done record.
sps() { python3 -c "import json,sys; d=[json.loads(l) for l in open(sys.argv[1])][-1]; print('%.0f' % (d['samples']/d['train_seconds']))" "$1"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

collectives() {
  echo "## all-reduce through hetsgd's comm layer against OpenMPI's own MPI_Allreduce loop"
  echo
  echo "| ranks | binding | 4 MB hetsgd ms | 4 MB MPI ms | overhead | 64 MB hetsgd ms | 64 MB MPI ms | overhead |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  for conf in "2 core" "2 none" "4 none"; do
    read -r np bind <<<"$conf"
    flags=(--bind-to "$bind" --oversubscribe "${local_flags[@]}")
    declare -A v=()
    for _ in 1 2 3 4 5; do
      while read -r mb g m o; do
        v[$mb-g]+="$g " v[$mb-m]+="$m " v[$mb-o]+="${o%\%} "
      done < <(mpirun -np "$np" "${flags[@]}" "$mpi" calibrate --network | awk '/^ +(4|64)\.0 MB/ {print $1, $3, $4, $5}')
    done
    echo "| $np | $bind | $(echo ${v[4.0-g]} | median) | $(echo ${v[4.0-m]} | median) | $(echo ${v[4.0-o]} | median)% | $(echo ${v[64.0-g]} | median) | $(echo ${v[64.0-m]} | median) | $(echo ${v[64.0-o]} | median)% |"
    unset v
  done
  echo
}

throughput() {
  echo "## samples/s, $1 rounds, medians"
  echo
  echo "| data | strategy | devices | one process | ranks of one device | ratio |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for set in bibtex delicious; do
    args=(--epochs 6)
    [ "$set" = delicious ] && args=(--data "$data/delicious" --epochs 2)
    for s in sync lsgd; do
      for n in 1 2 4; do
        a="" b=""
        for _ in $(seq "$1"); do
          "$one" train --strategy "$s" --devices "$n" "${args[@]}" --eval-every 100 --log "$out/t.jsonl" --force >/dev/null
          a+="$(sps "$out/t.jsonl") "
          mpirun -np "$n" "${unbound[@]}" "$mpi" train --strategy "$s" "${args[@]}" --eval-every 100 --log "$out/t.jsonl" --force >/dev/null 2>&1
          b+="$(sps "$out/t.jsonl") "
        done
        a=$(echo $a | median) b=$(echo $b | median)
        echo "| $set | $s | $n | $a | $b | $(python3 -c "print('%.2f' % ($b/$a))") |"
      done
    done
  done
  echo
}

overlap() {
  echo "## Layered SGD on 2 ranks as 2 nodes, Delicious: 6 runs each, medians"
  echo
  echo "| prep per sample | overlap | samples/s | reduce ms | prepared during ms | wait ms | broadcast ms |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for prep in 0 1e-5; do
    for ov in true false; do
      s="" r="" p="" w="" b=""
      for _ in 1 2 3 4 5 6; do
        mpirun -np 2 "${unbound[@]}" "$mpi" train --strategy lsgd --groups 2 --data "$data/delicious" --epochs 2 --eval-every 100 \
          --prep "$prep" --overlap="$ov" --log "$out/o.jsonl" --force >/dev/null 2>&1
        read -r a1 a2 a3 a4 a5 < <(python3 -c "import json,sys; d=[json.loads(l) for l in open(sys.argv[1])][-1]; l=d['layered']; print('%.0f %.3f %.3f %.3f %.3f' % (d['samples']/d['train_seconds'], l['reduce_ms'], l['overlap_ms'], l['wait_ms'], l['broadcast_ms']))" "$out/o.jsonl")
        s+="$a1 " r+="$a2 " p+="$a3 " w+="$a4 " b+="$a5 "
      done
      echo "| $prep | $ov | $(echo $s | median) | $(echo $r | median) | $(echo $p | median) | $(echo $w | median) | $(echo $b | median) |"
    done
  done
  echo
}

bars() {
  echo "## best P@1 on Bibtex in 3 epochs: 4 ranks against one process with 4 devices"
  echo
  echo "sync, lsgd and adacons deal the same batches in the same order wherever they run (one run each);"
  echo "adaptive and gem depend on which device finishes first: medians of 5 and 10 runs, every run in brackets."
  echo
  echo "| strategy | one process | 4 ranks | bar |"
  echo "| --- | --- | --- | --- |"
  for s in "sync" "lsgd --groups 2" "adaptive" "gem --lr 0.5" "adacons"; do
    runs=1
    case $s in adaptive) runs=5 ;; gem*) runs=10 ;; esac
    a="" b=""
    for _ in $(seq $runs); do
      # shellcheck disable=SC2086
      a+="$("$one" train --strategy $s --devices 4 --epochs 3 | awk '/^best P@1/ {print $3}') "
      # shellcheck disable=SC2086
      b+="$(mpirun -np 4 "${unbound[@]}" "$mpi" train --strategy $s --epochs 3 2>/dev/null | awk '/^best P@1/ {print $3}') "
    done
    ma=$(echo $a | median) mb=$(echo $b | median)
    show() { if [ "$runs" -gt 1 ]; then echo "$2 [$(echo $1)]"; else echo "$2"; fi; }
    if [ "$s" = sync ]; then
      ok=$(python3 -c "print('met' if abs($mb-$ma) <= 0.005 else 'NOT met')")
      echo "| $s | $(show "$a" "$ma") | $(show "$b" "$mb") | within 0.005: $ok |"
    else
      ok=$(python3 -c "print('met' if $mb >= 0.9*$ma else 'NOT met')")
      echo "| $s | $(show "$a" "$ma") | $(show "$b" "$mb") | ≥ 0.9×: $ok ($(python3 -c "print('%.2f' % ($mb/$ma))")×) |"
    fi
  done
  echo
}

ps() {
  echo "## parameter servers on Bibtex, 3 epochs: samples/s and staleness, medians of 3 runs"
  echo
  echo "| strategy | devices | one process samples/s | ranks samples/s | one process mean staleness | ranks mean staleness |"
  echo "| --- | --- | --- | --- | --- | --- |"
  # samples/s and the commits' mean staleness over the run, from a log.
  st() { python3 -c "
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
d = recs[-1]; a = [r for r in recs if r['event'] == 'async']
n = sum(r['commits'] - (a[i-1]['commits'] if i else 0) for i, r in enumerate(a))
tau = sum((r['commits'] - (a[i-1]['commits'] if i else 0)) * r['mean_staleness'] for i, r in enumerate(a))
print('%.0f %.2f' % (d['samples'] / d['train_seconds'], tau / n))" "$1"; }
  for s in gem downpour; do
    for n in 2 4; do
      a="" b="" ta="" tb=""
      for _ in 1 2 3; do
        "$one" train --strategy "$s" --lr 0.5 --devices "$n" --epochs 3 --eval-every 0.5 --log "$out/p.jsonl" --force >/dev/null
        read -r x y < <(st "$out/p.jsonl"); a+="$x " ta+="$y "
        mpirun -np "$n" "${unbound[@]}" "$mpi" train --strategy "$s" --lr 0.5 --epochs 3 --eval-every 0.5 --log "$out/p.jsonl" --force >/dev/null 2>&1
        read -r x y < <(st "$out/p.jsonl"); b+="$x " tb+="$y "
      done
      echo "| $s | $n | $(echo $a | median) | $(echo $b | median) | $(echo $ta | median) | $(echo $tb | median) |"
    done
  done
  echo
}

network() {
  echo "## this host's links, measured"
  echo
  mpirun -np 2 --bind-to core "${local_flags[@]}" "$mpi" calibrate --network --out "$out/shm.json" --force
  mpirun -np 2 --bind-to core --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "$mpi" calibrate --network --out "$out/tcp.json" --force
  # Shared memory within a node, TCP over loopback between nodes: the nearest
  # this single host comes to a cluster's two kinds of link.
  python3 - "$out/shm.json" "$out/tcp.json" "$out/shm-tcp.json" <<'EOF'
import json, sys
shm, tcp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
json.dump({"group_size": 0, "intra": shm["intra"], "inter": tcp["intra"], "all_reduce": "ring"}, open(sys.argv[3], "w"), indent=2)
EOF
  for net in shm shm-tcp; do
    "$one" bench --study lsgd --out "$out/lsgd-$net" --network "$out/$net.json" --force >/dev/null
    echo "### Layered SGD study with the links of $net.json"
    sed -n '/^## Throughput scaling/,/^At /p' "$out/lsgd-$net/report.md"
    echo
  done
}

case $section in
collectives) collectives ;;
throughput) throughput 5 ;;
overlap) overlap ;;
bars) bars ;;
ps) ps ;;
network) network ;;
all) collectives; throughput 5; overlap; bars; ps; network ;;
*) echo "unknown section $section (collectives, throughput, overlap, bars, ps, network, all)" >&2; exit 2 ;;
esac
