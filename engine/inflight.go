package engine

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/strategy"
)

// An op's collectives in flight (strategy.Host.IAllReduce). Across ranks
// a request is progressed by a goroutine of its own, which tests it every
// pollEvery until it completes: OpenMPI advances a non-blocking collective
// only inside MPI_Test and MPI_Wait, and the devices compute on other
// goroutines meanwhile (the transport is used from several goroutines at
// once, as comm.Comm allows). Over one rank a reduction is done when it
// starts.
//
// The executor keeps every Work it handed out until it completes, so that
// a checkpoint (settle) and the run's end find none in flight.

// pollEvery is how often a request in flight is tested: 50 µs costs a
// core a few per cent, and a model-sized all-reduce takes milliseconds.
const pollEvery = 50 * time.Microsecond

// inflight is a collective in flight: a request and the goroutine that
// progresses it.
type inflight struct {
	done chan struct{}
	err  error
}

func (f *inflight) Wait() error {
	<-f.done
	return f.err
}

// completed reports whether the collective has completed.
func (f *inflight) completed() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// progress tests req until it completes.
func (f *inflight) progress(req comm.Request) {
	defer close(f.done)
	for {
		ok, err := req.Test()
		if ok || err != nil {
			f.err = err
			return
		}
		time.Sleep(pollEvery)
	}
}

// works is the executor's record of the Works in flight.
type works struct {
	mu   sync.Mutex
	list []*inflight
}

// IAllReduce implements strategy.Host.
func (x *executor) IAllReduce(v []float32) (strategy.Work, error) {
	if x.world.Size() == 1 {
		return strategy.Done, nil
	}
	req, err := x.world.IAllReduce(v)
	if err != nil {
		return nil, err
	}
	f := &inflight{done: make(chan struct{})}
	x.inflight.mu.Lock()
	// Forget the completed ones, whose ops took their sums.
	x.inflight.list = slices.DeleteFunc(x.inflight.list, (*inflight).completed)
	x.inflight.list = append(x.inflight.list, f)
	x.inflight.mu.Unlock()
	go f.progress(req)
	return f, nil
}

// Pending implements strategy.Host.
func (x *executor) Pending() []float32 {
	if x.pending == nil && x.center != nil {
		x.pending = make([]float32, len(x.center))
	}
	return x.pending
}

// settle waits for every collective in flight on this rank (a checkpoint
// saves what they summed; the run's end releases their vectors).
func (x *executor) settle() error {
	x.inflight.mu.Lock()
	list := x.inflight.list
	x.inflight.list = nil
	x.inflight.mu.Unlock()
	var first error
	for _, f := range list {
		if err := f.Wait(); err != nil && first == nil {
			first = fmt.Errorf("engine: a collective in flight: %w", err)
		}
	}
	return first
}
