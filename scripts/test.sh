#!/usr/bin/env bash
# The tests, as the README's second command and CI run them: go vet, the
# pure-Go tests with and without the race detector, every fuzz target
# briefly, then the tests of the two cgo builds — OpenBLAS (-tags openblas)
# and OpenMPI (-tags mpi; they start mpirun themselves, on shared memory and
# loopback only) — and of the GPU backend's build (-tags cuda: it loads
# CUDA's libraries when it runs; its tests build stand-ins of them with
# gcc, so they need no GPU). The Debian packages those builds need, NumPy (a test reads
# the exported model with it), scikit-learn (the TF-IDF vectors are checked
# against its TfidfVectorizer's) and Chromium (the dashboard's test draws its
# page in it, headless) are installed when missing and apt-get can (as
# root); otherwise their tests are skipped with a message saying what to
# install.
#
#   scripts/test.sh          every stage below
#   scripts/test.sh --long   and then the long stage (LONG=1 does the same):
#                            the tests that skip without HETSGD_LONG=1
#                            (testdata.Long), and the bars' full counts
#                            (20 runs stopped by a signal; 10 MPI jobs
#                            killed and restarted)
#
# Every stage runs even when one before it failed, and the end lists each
# stage's result: the script fails if any stage did. Each `go test` has an
# explicit -timeout, which Go applies to each package: at least three times
# what the package's tests took on a two-core machine beside `stress --cpu
# 2`, a training run and other builds (the slowest, cmd/hetsgd under the
# race detector, 366 s of its 20 minutes; TIMEOUT_SCALE=2 doubles them).
# The packages whose tests take longest (cmd/hetsgd, engine and data) run
# as stages of their own, so that the others keep a tighter limit. No test
# waits on the clock but to catch a hang (testdata.Hang, 2 minutes). Each
# runs its tests (-count=1) rather than take their results from Go's test
# cache, which would say nothing of this machine as it is now.
set -uo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--buildvcs=false}
long=${LONG:-0}
for arg in "$@"; do
  case $arg in
  --long) long=1 ;;
  *)
    echo "scripts/test.sh: unknown argument $arg (--long adds the long stage)" >&2
    exit 2
    ;;
  esac
done
scale=${TIMEOUT_SCALE:-1}
limit() { echo "$(($1 * scale))m"; } # minutes × the scale, for -timeout

# heavy are the packages whose tests take longest (their folders); light,
# every other package.
heavy=(cmd/hetsgd engine data)
mod=$(go list -m)
mapfile -t light < <(go list ./... | grep -v -x -F -f <(printf "$mod/%s\n" "${heavy[@]}"))
heavy=("${heavy[@]/#/./}")

have_blas() { [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ]; }
have_mpi() { command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; }
have_numpy() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; }
have_sklearn() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sklearn' 2>/dev/null; }
have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }

need=()
have_blas || need+=(libopenblas-dev)
have_mpi || need+=(libopenmpi-dev openmpi-bin pkg-config)
have_numpy || need+=(python3-numpy)     # the exported model, read by NumPy
have_sklearn || need+=(python3-sklearn) # data from-text's vectors, against TfidfVectorizer's
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

mpi_env() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}

cuda_tests() {
  go vet -tags cuda ./cuda/... ./gpu/... ./cmd/hetsgd && go test -count=1 -tags cuda -timeout "$(limit 5)" ./cuda/... ./gpu/... && go test -count=1 -tags cuda -timeout "$(limit 5)" -run AcrossBackends ./cmd/hetsgd
}

mpi_tests() {
  mpi_env
  go vet -tags mpi ./... && go test -count=1 -tags mpi -timeout "$(limit 20)" ./comm/... ./cmd/hetsgd
}

# long_tests lists "FOLDER TEST" for each test that calls testdata.Long.
long_tests() {
  grep -rl --include='*_test.go' 'testdata\.Long(' . | sort | while read -r f; do
    awk -v dir="$(dirname "$f")" '
      /^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
      /testdata\.Long\(/ { print dir, name }' "$f"
  done
}

long_stage() {
  local rc=0 dir names
  for dir in $(long_tests | cut -d' ' -f1 | sort -u); do
    names=$(long_tests | awk -v d="$dir" '$1 == d { printf "%s%s", sep, $2; sep = "|" }')
    echo "$dir: $names"
    HETSGD_LONG=1 go test -count=1 -timeout "$(limit 30)" -run "^($names)\$" "$dir" || rc=1
  done
  # The bar's 20 stops at random moments (the ordinary stage stops 8).
  go test -count=1 -timeout "$(limit 30)" -run '^TestSignalSavesTheRun$' ./cmd/hetsgd -stops 20 || rc=1
  if have_mpi; then
    # BENCHMARKS.md §13's 10 jobs killed and restarted (the mpi stage kills 4).
    mpi_env
    go test -count=1 -tags mpi -timeout "$(limit 30)" -run '^TestMPILaunchRestarts$' ./cmd/hetsgd -launch-kills 10 || rc=1
  fi
  return $rc
}

stage "go vet" go vet ./...
stage "tests" go test -count=1 -timeout "$(limit 10)" "${light[@]}"
stage "tests of ${heavy[*]#./}" go test -count=1 -timeout "$(limit 15)" "${heavy[@]}"
stage "tests with the race detector" go test -count=1 -race -timeout "$(limit 10)" "${light[@]}"
stage "tests of ${heavy[*]#./} with the race detector" go test -count=1 -race -timeout "$(limit 20)" "${heavy[@]}"
stage "every fuzz target, briefly, from its corpus" fuzz_all
stage "the cuda build (CUDA's libraries found when it runs; stand-ins built with gcc)" cuda_tests
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
if ((long)); then
  stage "the long stage (tests that skip without HETSGD_LONG=1; the bars' full counts)" long_stage
fi

echo "== results"
printf '  %s\n' "${results[@]}"
if ((failed)); then
  echo "== some tests failed" >&2
  exit 1
fi
echo "== all tests passed"
