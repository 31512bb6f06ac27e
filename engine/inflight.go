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
// a request is tested by a goroutine of its own while it is in flight:
// OpenMPI advances a non-blocking collective only inside MPI_Test and
// MPI_Wait, and the devices compute on other goroutines meanwhile (the
// transport is used from several goroutines at once, as comm.Comm allows).
// Go's timers sleep about a millisecond at least, so the goroutine tests
// the request about once a millisecond, which costs next to nothing; the
// op that waits for the sum takes the request over and finishes it with
// MPI_Wait, at the transport's full speed. Over one rank a reduction is
// done when it starts.
//
// The executor keeps every Work it handed out until it completes, so that
// a checkpoint (settle) and the run's end find none in flight.

// pollEvery is the pause between two tests of a request in flight (in
// effect about 1 ms: see above).
const pollEvery = 50 * time.Microsecond

// inflight is a collective in flight: its request, tested by one goroutine
// at a time (mu), the progress goroutine's or the waiter's.
type inflight struct {
	mu       sync.Mutex
	req      comm.Request
	finished bool
	err      error
	done     chan struct{}
}

// Wait finishes the collective on the caller's goroutine.
func (f *inflight) Wait() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.finished {
		f.finish(f.req.Wait())
	}
	return f.err
}

// finish records the collective's end; f.mu is held.
func (f *inflight) finish(err error) {
	f.finished, f.err = true, err
	close(f.done)
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

// progress tests the request until it completes or a waiter took it over.
func (f *inflight) progress() {
	for {
		f.mu.Lock()
		if f.finished {
			f.mu.Unlock()
			return
		}
		if ok, err := f.req.Test(); ok || err != nil {
			f.finish(err)
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
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
	f := &inflight{req: req, done: make(chan struct{})}
	x.inflight.mu.Lock()
	// Forget the completed ones, whose ops took their sums.
	x.inflight.list = slices.DeleteFunc(x.inflight.list, (*inflight).completed)
	x.inflight.list = append(x.inflight.list, f)
	x.inflight.mu.Unlock()
	go f.progress()
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
