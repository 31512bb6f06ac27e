package engine

import (
	"cmp"
	"context"
	"slices"
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
	stopped  time.Time // when the pause under way began (zero: none)
	done     chan doneMsg
	queue    []strategy.Event // events raised by the driver, in order
	head     int
	inflight int
	// running marks the devices whose goroutines hold a batch the driver
	// dispatched: from the dispatch to the report, which comes even from a
	// device whose reports are lost (a stall).
	running []bool
	// Faults still to strike, in order, and stalled devices to give up on
	// (by fault, with the time).
	faults  []Fault
	giveUps []giveUp
	timer   *time.Timer
	// Rank faults still to strike, in order (Config.RankFaults).
	rankFaults []Fault
}

type giveUp struct {
	at    float64
	fault Fault
}

// doneMsg is a finished batch: its device and mean loss.
type doneMsg struct {
	dev  int
	loss float64
}

func newRealClock(r *run) *realClock {
	c := &realClock{r: r, t0: time.Now(), done: make(chan doneMsg, r.cfg.Devices+1), queue: make([]strategy.Event, 0, 4),
		running: make([]bool, r.cfg.Devices), faults: sortedFaults(r.cfg.Faults), rankFaults: sortedFaults(r.cfg.RankFaults)}
	r.job.start(c.done)
	return c
}

func (c *realClock) now() float64 {
	if !c.stopped.IsZero() { // paused: the clock stands where the pause began
		return (c.stopped.Sub(c.t0) - c.paused).Seconds()
	}
	return (time.Since(c.t0) - c.paused).Seconds()
}

// resumeAt sets the clock to t seconds, where a resumed run left off.
func (c *realClock) resumeAt(t float64) {
	c.t0, c.paused = time.Now().Add(-time.Duration(t*1e9)), 0
	// A rank's fault before the resumed time struck the run that was saved
	// (or would have): it does not strike the resumed one.
	for len(c.rankFaults) > 0 && c.rankFaults[0].At < t {
		c.rankFaults = c.rankFaults[1:]
	}
}

func (c *realClock) dispatch(w work) error {
	// Counted only once started or sent: drain must not wait for a batch
	// that never left. (A transport error ends the job; the world is not
	// reused.)
	if err := c.r.job.dispatch(w); err != nil {
		return err
	}
	c.inflight++
	c.running[w.dev] = true
	return nil
}

func (c *realClock) computing(dev int) bool { return c.running[dev] }

func (c *realClock) started(n int) { c.inflight += n }

// committed: a real commit's messages take the time they take.
func (c *realClock) committed(*strategy.Action) {}

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
	for {
		if ev, ok := c.fault(); ok {
			return ev, true, nil
		}
		// Live work, or a stalled device a barrier may be waiting for, keeps
		// the run going; faults yet to strike do not.
		if c.inflight == 0 && len(c.giveUps) == 0 {
			return strategy.Event{}, false, nil
		}
		var wake <-chan time.Time
		if at, ok := c.nextFault(); ok {
			if c.timer == nil {
				c.timer = time.NewTimer(0)
				<-c.timer.C
			}
			c.timer.Reset(time.Duration((at - c.now()) * 1e9))
			wake = c.timer.C
		}
		select {
		case m := <-c.done:
			c.inflight--
			c.running[m.dev] = false
			if c.r.members.silenced(m.dev) {
				continue // a stalled or departed device's batch never reports
			}
			c.r.slots[m.dev].loss = m.loss
			return strategy.Event{Kind: strategy.BatchDone, Device: m.dev}, true, nil
		case <-wake:
		case <-ctx.Done():
			return strategy.Event{}, false, ctx.Err()
		}
	}
}

// nextFault returns when the next fault strikes or the next stalled device
// is given up on.
func (c *realClock) nextFault() (float64, bool) {
	at, ok := 0.0, false
	if len(c.faults) > 0 {
		at, ok = c.faults[0].At, true
	}
	if len(c.giveUps) > 0 && (!ok || c.giveUps[0].at < at) {
		at, ok = c.giveUps[0].at, true
	}
	if len(c.rankFaults) > 0 && (!ok || c.rankFaults[0].At < at) {
		at, ok = c.rankFaults[0].At, true
	}
	return at, ok
}

// fault strikes what is due and returns the strategy's news of a departure.
func (c *realClock) fault() (strategy.Event, bool) {
	for {
		at, ok := c.nextFault()
		if !ok || at > c.now() {
			return strategy.Event{}, false
		}
		if len(c.rankFaults) > 0 && c.rankFaults[0].At == at {
			f := c.rankFaults[0]
			c.rankFaults = c.rankFaults[1:]
			c.r.strikeRank(f, c.now())
			continue
		}
		if len(c.giveUps) > 0 && c.giveUps[0].at == at {
			g := c.giveUps[0]
			c.giveUps = c.giveUps[1:]
			if c.r.leave(g.fault.Device, g.fault.Kind, c.now()) {
				return leaveEvent(g.fault.Device), true
			}
			continue
		}
		f := c.faults[0]
		c.faults = c.faults[1:]
		if c.r.members.gone(f.Device) {
			continue
		}
		leave, giveUpAt := c.r.strike(f, c.now())
		if giveUpAt > 0 {
			c.giveUps = append(c.giveUps, giveUp{at: giveUpAt, fault: f})
			slices.SortStableFunc(c.giveUps, func(a, b giveUp) int { return cmp.Compare(a.at, b.at) })
		}
		if leave && c.r.leave(f.Device, f.Kind, c.now()) {
			return leaveEvent(f.Device), true
		}
	}
}

func (c *realClock) pause(f func() error) error {
	c.stopped = time.Now()
	err := f()
	c.paused += time.Since(c.stopped)
	c.stopped = time.Time{}
	return err
}

// drain waits for the batches still in flight, so that no device touches its
// replica after Run returns, and stops the goroutines. Batches are in flight
// here only when the run stops early: the devices skip their slow-downs.
func (c *realClock) drain() {
	if c.inflight > 0 {
		c.r.job.hurry()
	}
	for ; c.inflight > 0; c.inflight-- {
		m := <-c.done
		c.r.slots[m.dev].busy = false
		c.running[m.dev] = false
	}
	c.r.job.stopDevices()
}
