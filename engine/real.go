package engine

import (
	"context"
	"time"

	"github.com/hetsgd/hetsgd/strategy"
)

// realClock runs every device in its own goroutine (on this rank, or on
// others') and measures wall time since the start, less the time spent
// evaluating. Batches are drawn in the order they are dispatched, so the
// data order depends only on the order of dispatches; collectives run on the
// driver's goroutine while every device is idle.
type realClock struct {
	r        *run
	t0       time.Time
	paused   time.Duration
	done     chan doneMsg
	queue    []strategy.Event // events raised by the driver, in order
	head     int
	inflight int
}

// doneMsg is a finished batch: its device and mean loss.
type doneMsg struct {
	dev  int
	loss float64
}

func newRealClock(r *run) *realClock {
	c := &realClock{r: r, t0: time.Now(), done: make(chan doneMsg, r.cfg.Devices+1), queue: make([]strategy.Event, 0, 4)}
	r.x.startDevices(func(d *device) { c.done <- doneMsg{dev: d.id, loss: d.loss} })
	if r.cl != nil {
		go r.cl.receive(c.done)
	}
	return c
}

func (c *realClock) now() float64 { return (time.Since(c.t0) - c.paused).Seconds() }

func (c *realClock) dispatch(w work) error {
	if d := c.r.x.local(w.dev); d != nil {
		c.r.x.load(d, w) // under Pull, copies θ before the goroutine runs
		c.r.x.run(d)
		c.inflight++
		return nil
	}
	// Counted only once sent: drain must not wait for a batch that never
	// left. (A transport error ends the job; the world is not reused.)
	if err := c.r.cl.dispatch(w, c.r.x.center); err != nil {
		return err
	}
	c.inflight++
	return nil
}

func (c *realClock) started(n int) { c.inflight += n }

// after queues ev: under the real clock an action is done when the driver
// has carried it out. The queue is emptied in place, so that its backing
// array is reused rather than regrown each step.
func (c *realClock) after(_ *strategy.Action, ev strategy.Event) { c.queue = append(c.queue, ev) }

func (c *realClock) next(ctx context.Context) (strategy.Event, bool, error) {
	if c.head < len(c.queue) {
		ev := c.queue[c.head]
		if c.head++; c.head == len(c.queue) {
			c.queue, c.head = c.queue[:0], 0
		}
		return ev, true, nil
	}
	if c.inflight == 0 {
		return strategy.Event{}, false, nil
	}
	select {
	case m := <-c.done:
		c.inflight--
		c.r.slots[m.dev].loss = m.loss
		return strategy.Event{Kind: strategy.BatchDone, Device: m.dev}, true, nil
	case <-ctx.Done():
		return strategy.Event{}, false, ctx.Err()
	}
}

func (c *realClock) pause(f func() error) error {
	t := time.Now()
	err := f()
	c.paused += time.Since(t)
	return err
}

// drain waits for the batches still in flight, so that no device touches its
// replica after Run returns, and stops the goroutines.
func (c *realClock) drain() {
	for ; c.inflight > 0; c.inflight-- {
		m := <-c.done
		c.r.slots[m.dev].busy = false
	}
	c.r.x.stopDevices()
	if c.r.cl != nil {
		c.r.cl.quit()
	}
}
