//go:build mpi

package main

// The MPI transport: mpirun -np N hetsgd train ... runs one job across N
// ranks.
import _ "github.com/hetsgd/hetsgd/comm/mpi"
