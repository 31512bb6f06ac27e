#!/usr/bin/env bash
# The tests, as the README's second command and CI run them: go vet, the
# pure-Go tests with and without the race detector, every fuzz target
# briefly, then the tests of the two cgo builds — OpenBLAS (-tags openblas)
# and OpenMPI (-tags mpi; they start mpirun themselves, on shared memory and
# loopback only). The Debian packages those builds need, NumPy (a test reads
# the exported model with it) and Chromium (the dashboard's test draws its
# page in it, headless) are installed when missing and apt-get can (as
# root); otherwise their tests are skipped with a message saying what to
# install.
#
# Every stage runs even when one before it failed, and the end lists each
# stage's result: the script fails if any stage did. Each `go test` has an
# explicit -timeout, well above what its stage takes on a two-core machine
# whose cores another process keeps busy (TIMEOUT_SCALE=2 doubles them), and
# runs its tests (-count=1) rather than take their results from Go's test
# cache, which would say nothing of this machine as it is now.
set -uo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--buildvcs=false}
scale=${TIMEOUT_SCALE:-1}
limit() { echo "$(($1 * scale))m"; } # minutes × the scale, for -timeout

have_blas() { [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ]; }
have_mpi() { command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; }
have_numpy() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; }
have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }

need=()
have_blas || need+=(libopenblas-dev)
have_mpi || need+=(libopenmpi-dev openmpi-bin pkg-config)
have_numpy || need+=(python3-numpy) # the exported model, read by NumPy
have_chromium || need+=(chromium)    # the dashboard's browser test loads its page headless
if ((${#need[@]})) && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "== installing ${need[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null 2>&1 ||
    echo "could not install ${need[*]}" >&2
fi

results=() # "stage: result (seconds)", in order
failed=0
# stage NAME CMD...: runs CMD as the stage NAME and records how it ended.
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  if "$@"; then
    results+=("ok      $name ($((SECONDS - start)) s)")
  else
    results+=("FAILED  $name ($((SECONDS - start)) s)")
    failed=1
  fi
}
skip() { results+=("skipped $1: $2"); echo "== skipping $1: $2" >&2; }

# fuzz_all fuzzes every target briefly. Go's fuzzing engine can exit
# non-zero when -fuzztime runs out while a worker is mid-input, having
# found nothing ("context deadline exceeded", no input written; a known
# race of its coordinator); a finding always writes its input ("Failing input written
# to"). So a failure without a written input is run once more, and a
# failure prints the whole output, not its last lines.
fuzz_all() {
  local rc=0 pkg target out
  fuzz() { go test -run '^$' -fuzz "^$target\$" -fuzztime "${FUZZTIME:-3s}" -timeout "$(limit 5)" "$pkg" 2>&1; }
  for pkg in $(go list ./...); do
    for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
      echo "$pkg $target"
      if out=$(fuzz); then
        echo "$out" | tail -n 3
        continue
      fi
      if ! grep -q "Failing input written to" <<<"$out"; then
        echo "$out" | tail -n 5
        echo "(the fuzzing engine failed without writing an input: once more)"
        if out=$(fuzz); then
          echo "$out" | tail -n 3
          continue
        fi
      fi
      echo "$out"
      rc=1
    done
  done
  return $rc
}

mpi_tests() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  go vet -tags mpi ./... && go test -count=1 -tags mpi -timeout "$(limit 15)" ./comm/... ./cmd/hetsgd
}

stage "go vet" go vet ./...
stage "tests" go test -count=1 -timeout "$(limit 15)" ./...
stage "tests with the race detector" go test -count=1 -race -timeout "$(limit 20)" ./...
stage "every fuzz target, briefly, from its corpus" fuzz_all
if have_blas; then
  stage "the openblas build (OpenBLAS's SGEMM through the same conformance tests)" \
    bash -c "go vet -tags openblas ./... && go test -count=1 -tags openblas -timeout $(limit 15) ./kernel/... ./engine"
else
  skip "the openblas build" "install libopenblas-dev"
fi
if have_mpi; then
  stage "the mpi build (the transport's conformance, the engine and the tool under mpirun)" mpi_tests
else
  skip "the mpi build" "install libopenmpi-dev openmpi-bin pkg-config"
fi

echo "== results"
printf '  %s\n' "${results[@]}"
if ((failed)); then
  echo "== some tests failed" >&2
  exit 1
fi
echo "== all tests passed"
