#!/usr/bin/env bash
# The tests, as the README's second command and CI run them: go vet, the
# pure-Go tests with and without the race detector, then the tests of the two
# cgo builds — OpenBLAS (-tags openblas) and OpenMPI (-tags mpi; they start
# mpirun themselves, on shared memory and loopback only). The Debian packages
# those builds need, NumPy (a test reads the exported model with it) and
# Chromium (the dashboard's test draws its page in it, headless) are
# installed when missing and apt-get can (as root); otherwise their tests are
# skipped with a message saying what to install.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--buildvcs=false}

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

echo "== go vet"
go vet ./...
echo "== tests"
go test ./...
echo "== tests with the race detector"
go test -race ./...
echo "== every fuzz target, briefly, from its corpus"
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "$pkg $target"
    go test -run '^$' -fuzz "^$target\$" -fuzztime "${FUZZTIME:-3s}" "$pkg" 2>&1 | tail -n 3
  done
done

if have_blas; then
  echo "== the openblas build (OpenBLAS's SGEMM through the same conformance tests)"
  go vet -tags openblas ./...
  go test -tags openblas ./kernel/... ./engine
else
  echo "== skipping the openblas build: install libopenblas-dev" >&2
fi

if have_mpi; then
  echo "== the mpi build (the transport's conformance, the engine and the tool under mpirun)"
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  go vet -tags mpi ./...
  go test -tags mpi ./comm/... ./cmd/hetsgd
else
  echo "== skipping the mpi build: install libopenmpi-dev openmpi-bin pkg-config" >&2
fi
echo "== all tests passed"
