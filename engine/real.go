package engine

import (
	"context"
	"time"

	"github.com/hetsgd/hetsgd/strategy"
)

// runReal runs every device in its own goroutine. The driver (this
// goroutine) feeds the strategy, gathers each dispatched batch from the
// shared stream (so the data order depends only on the order of dispatches),
// and executes collectives itself while every device is idle. The clock is
// wall time since the start, less the time spent evaluating.
func (r *run) runReal(ctx context.Context) error {
	start := time.Now()
	var paused time.Duration
	r.now = func() float64 { return (time.Since(start) - paused).Seconds() }

	// Speeds are relative: the fastest device runs as fast as it can and
	// the others are stretched by fastest/speed.
	fastest := 0.0
	for _, d := range r.devs {
		fastest = max(fastest, d.speed)
	}
	done := make(chan *device, len(r.devs))
	for _, d := range r.devs {
		jobs := make(chan struct{}, 1)
		d.jobs = jobs
		go work(d, fastest/d.speed, jobs, done)
	}
	defer func() {
		for _, d := range r.devs {
			close(d.jobs)
		}
	}()

	// Events the loop raises itself, in order; emptied in place so that its
	// backing array is reused rather than regrown each step.
	queue := make([]strategy.Event, 1, 4)
	queue[0] = strategy.Event{Kind: strategy.Start}
	head := 0
	inflight := 0
	for {
		var ev strategy.Event
		switch {
		case head < len(queue):
			ev = queue[head]
			if head++; head == len(queue) {
				queue, head = queue[:0], 0
			}
			if ev.Kind == strategy.CollectiveDone {
				t0 := time.Now()
				err := r.evaluate(false)
				paused += time.Since(t0)
				if err != nil {
					return err
				}
			}
		case inflight > 0:
			select {
			case d := <-done:
				inflight--
				ev = r.finish(d)
				if err := r.check(d); err != nil {
					r.drain(done, inflight)
					return err
				}

			case <-ctx.Done():
				r.drain(done, inflight)
				return ctx.Err()
			}
		default:
			t0 := time.Now()
			err := r.evaluate(true)
			paused += time.Since(t0)
			return err
		}
		r.acts = r.strat.Step(ev, r.acts[:0])
		for _, a := range r.acts {
			switch a.Kind {
			case strategy.Dispatch:
				if d, ok := r.begin(a); ok { // pulls, under Pull, before the goroutine runs
					d.jobs <- struct{}{}
					inflight++
				}
			case strategy.QueryNorms:
				queue = append(queue, r.normsEvent())
			case strategy.QueryConsensus:
				queue = append(queue, r.consensusEvent())
			case strategy.Commit:
				r.commit(a)
			default:
				r.collective(a)
				queue = append(queue, strategy.Event{Kind: strategy.CollectiveDone})
			}
		}
		if r.info.Async && ev.Kind == strategy.BatchDone {
			// Between commits the centre is only touched by this goroutine,
			// so it can be scored while devices compute; their work during
			// the evaluation is at most one batch each.
			t0 := time.Now()
			err := r.evaluate(false)
			paused += time.Since(t0)
			if err != nil {
				r.drain(done, inflight)
				return err
			}
		}
	}
}

// drain waits for the batches still in flight, so that no device goroutine
// touches its replica after Run returns.
func (r *run) drain(done chan *device, inflight int) {
	for ; inflight > 0; inflight-- {
		d := <-done
		d.busy = false
	}
}

// work is a device's goroutine: compute each batch it is given, then wait
// out its injected slowdown — with stretch s the batch takes s times its
// compute time in all — and report.
func work(d *device, stretch float64, jobs <-chan struct{}, done chan<- *device) {
	for range jobs {
		t0 := time.Now()
		d.compute() // the run never uses the real clock with TimingOnly
		if stretch > 1 {
			time.Sleep(time.Duration(float64(time.Since(t0)) * (stretch - 1)))
		}
		done <- d
	}
}
