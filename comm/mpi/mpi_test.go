//go:build mpi

package mpi_test

import (
	"os"
	"testing"

	"github.com/hetsgd/hetsgd/internal/race"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
	"github.com/hetsgd/hetsgd/comm/mpi"
	"github.com/hetsgd/hetsgd/internal/mpirun"
)

// The tests run on every rank of jobs of 1, 2, 3 and 4 ranks (see
// mpirun.Main).
func TestMain(m *testing.M) {
	mpirun.Main(m, func() {
		if w, err := mpi.Open(); err == nil {
			w.Close()
		}
	}, 1, 2, 3, 4)
}

func world(t *testing.T) *mpi.Comm {
	t.Helper()
	w, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// OpenMPI passes the conformance suite every transport runs.
func TestConformance(t *testing.T) {
	if err := commtest.Check(world(t)); err != nil {
		t.Fatal(err)
	}
}

// The world the tool opens under mpirun is this transport's.
func TestOpenWorld(t *testing.T) {
	w := world(t)
	c, err := comm.OpenWorld()
	if err != nil {
		t.Fatal(err)
	}
	if c != comm.Comm(w) || c.Size() < 1 {
		t.Fatalf("OpenWorld gave %v, want the MPI world", c)
	}
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Fatal("not under mpirun")
	}
}

// Receiving a message does not allocate: Recv runs for every batch of a
// distributed run.
func TestRecvDoesNotAllocate(t *testing.T) {
	race.SkipAllocs(t)
	w := world(t)
	if w.Size() != 2 {
		t.Skip("checked on 2 ranks")
	}
	const runs = 50
	b := make([]byte, 16)
	if w.Rank() == 0 {
		for range runs + 1 {
			if err := w.Send(1, 3, b); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		allocs := testing.AllocsPerRun(runs, func() {
			if _, err := w.Recv(0, 3, b); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Recv allocates %v times", allocs)
		}
	}
	w.Barrier()
}
