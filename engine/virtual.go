package engine

import (
	"context"

	"github.com/hetsgd/hetsgd/strategy"
)

// A virtual-time event: something the strategy learns at time t. Ties are
// broken by the order events were scheduled, so a run is deterministic.
type vevent struct {
	t   float64
	seq int64
	ev  strategy.Event
}

// vqueue is a binary min-heap of events by (t, seq), typed so that pushing
// an event does not allocate (container/heap would box it).
type vqueue []vevent

func (q vqueue) less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}

func (q *vqueue) push(e vevent) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *vqueue) pop() vevent {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(h) && h.less(l, small) {
			small = l
		}
		if r := l + 1; r < len(h) && h.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	*q = h
	return top
}

// runVirtual is the discrete-event simulation. Work is computed for real
// when it starts (a device's replica is its own until its batch completes,
// and collectives happen only when every device is idle, so computing early
// changes nothing); its completion is an event at start + cost. Evaluation
// happens when a collective completes, with the clock stopped by nature.
func (r *run) runVirtual(ctx context.Context) error {
	var (
		t   float64
		seq int64
		q   vqueue
	)
	r.now = func() float64 { return t }
	schedule := func(at float64, ev strategy.Event) {
		seq++
		q.push(vevent{t: at, seq: seq, ev: ev})
	}
	bytes := 4 * r.m.NumParams()
	n := len(r.devs)
	schedule(0, strategy.Event{Kind: strategy.Start})
	for len(q) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := q.pop()
		t = e.t
		switch e.ev.Kind {
		case strategy.BatchDone:
			d := r.devs[e.ev.Device]
			e.ev = r.finish(d)
			if err := r.check(d); err != nil {
				return err
			}
		case strategy.CollectiveDone:
			if err := r.evaluate(false); err != nil {
				return err
			}
		}
		r.acts = r.strat.Step(e.ev, r.acts[:0])
		for _, a := range r.acts {
			switch a.Kind {
			case strategy.Dispatch:
				d, ok := r.begin(a)
				if !ok {
					continue
				}
				d.compute()
				cost := r.cfg.Cost.batch(r.shape, d.batch.Len(), d.batch.X.NNZ())
				if d.mode == strategy.LocalStep {
					cost += r.cfg.Cost.update(r.shape)
				}
				schedule(t+cost/d.speed*d.noiseFactor(r.cfg.Noise), strategy.Event{Kind: strategy.BatchDone, Device: d.id})
			case strategy.QueryNorms:
				// An all-gather of one scalar per device.
				schedule(t+r.cfg.Net.AllGather(8, n), r.normsEvent())
			default:
				r.collective(a)
				cost := r.cfg.Net.RingAllReduce(bytes, n)
				switch a.Kind {
				case strategy.AllReduce: // every device applies the update, in parallel
					cost += r.cfg.Cost.update(r.shape)
				case strategy.Merge, strategy.CenterSync: // a few element-wise passes
					cost += 3 * r.cfg.Cost.update(r.shape)
				}
				schedule(t+cost, strategy.Event{Kind: strategy.CollectiveDone})
			}
		}
	}
	return r.evaluate(true)
}
