package comm_test

import (
	"errors"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
)

// The in-memory world passes the conformance suite at every size the
// engine uses, one goroutine per rank.
func TestMemConformance(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		for _, err := range commtest.OnMem(n, commtest.Check) {
			if err != nil {
				t.Errorf("%d ranks: %v", n, err)
			}
		}
	}
}

// A rank calling another collective than the others gets an error, not a
// wrong answer.
func TestMemMismatch(t *testing.T) {
	world := comm.Mem(2)
	errs := make(chan error, 2)
	go func() { errs <- world[0].AllReduce([]float32{1}) }()
	go func() { errs <- world[1].Broadcast([]float32{1}, 1) }()
	for range 2 {
		if err := <-errs; err == nil {
			t.Fatal("mismatched collectives accepted")
		}
	}
}

func TestOpenWorldWithoutMPI(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	if len(comm.Transports()) > 0 {
		t.Skip("built with a transport")
	}
	_, err := comm.OpenWorld()
	if err == nil || !errorsIs(err, comm.ErrNoMPI) {
		t.Fatalf("OpenWorld under mpirun without MPI: %v", err)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// MeasureNetwork over the in-memory world: one host, so Intra only, a fit
// with a positive latency and bandwidth, and all-reduce timings.
func TestMeasureNetwork(t *testing.T) {
	reps := make([]*comm.NetworkReport, 3)
	errs := commtest.OnMem(3, func(c comm.Comm) (err error) {
		reps[c.Rank()], err = comm.MeasureNetwork(c, []int{8, 1 << 10, 1 << 20, 2 << 20}, []int{1 << 16})
		return err
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rep := reps[0]
	if rep.Ranks != 3 || rep.Hosts != 1 || rep.Intra == nil || rep.Inter != nil || rep.Intra.B != 1 {
		t.Fatalf("report %+v", rep)
	}
	if err := rep.Model.Validate(); err != nil || !(rep.Model.Intra.Latency > 0) || rep.Model.Intra != rep.Model.Inter || rep.Model.GroupSize != 0 {
		t.Fatalf("model %+v: %v", rep.Model, err)
	}
	if len(rep.AllReduce) != 1 || !(rep.AllReduce[0].Go > 0) || rep.AllReduce[0].Raw != 0 || !(rep.AllReduce[0].Model > 0) {
		t.Fatalf("all-reduce timings %+v", rep.AllReduce)
	}
	if _, err := comm.MeasureNetwork(comm.Self(), nil, nil); err == nil {
		t.Fatal("measured the network of one rank")
	}
}
