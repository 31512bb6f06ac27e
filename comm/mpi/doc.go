// Package mpi is the MPI transport of package comm: cgo over OpenMPI's C API
// (Debian's libopenmpi-dev), built only with the tag mpi:
//
//	go build -tags mpi ./cmd/hetsgd
//	mpirun -np 4 ./hetsgd train --strategy sync
//
// Importing it registers the transport "mpi", which comm.OpenWorld uses when
// mpirun started the process. The world is initialised with
// MPI_THREAD_MULTIPLE (devices' goroutines send while the driver takes part
// in collectives) and MPI_ERRORS_RETURN, so every failure comes back as an
// error. Collectives work in place on the caller's vectors (MPI_IN_PLACE):
// no copy of a replica is made. IAllReduce pins its vector with
// runtime.Pinner until the request completes. Recv waits with MPI_Improbe,
// yielding the core for 200 µs and then sleeping 1–100 µs between probes,
// so that a rank waiting for work leaves its core to the ranks that compute
// (a blocking MPI_Recv would spin on it).
//
// MPI_Init and MPI_Finalize must run on the same OS thread: they run on a
// goroutine locked to a thread of its own, so the world may be opened and
// closed from any goroutine.
//
// Without the tag the package holds this documentation only, and a binary
// that mpirun starts refuses to run (comm.ErrNoMPI).
package mpi
