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
// happens when a collective completes (for async strategies, after any
// event), with the clock stopped by nature.
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
	n := len(r.devs)
	net := r.cfg.Net
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
				r.compute(d)
				start := t
				if a.Mode == strategy.Pull {
					// The commit of the previous update and this pull queue on
					// the parameter server's link.
					start = max(t, r.serverFree)
					r.serverFree = start + 2*float64(r.bytes)/net.Link(n).Bandwidth
					start = r.serverFree + 2*net.Link(n).Latency
				}
				rows, nnz := d.worker.Loaded()
				cost := r.cfg.Cost.Batch(r.shape, rows, nnz)
				if d.mode == strategy.LocalStep {
					cost += r.cfg.Cost.Update(r.shape)
				}
				if !d.prepared {
					cost += r.cfg.Prep * float64(rows)
				}
				d.prepared = false
				schedule(start+cost/d.speed*d.noiseFactor(r.cfg.Noise), strategy.Event{Kind: strategy.BatchDone, Device: d.id})
			case strategy.QueryNorms:
				schedule(t+net.AllGatherCost(8, n), r.normsEvent())
			case strategy.QueryConsensus:
				// An all-reduce of the gradients for ḡ and an all-gather of the
				// coefficients.
				ev := r.consensusEvent()
				schedule(t+net.AllReduceCost(net.AllReduce, r.bytes, n)+net.AllGatherCost(8, n), ev)
			case strategy.Commit:
				r.commit(a)
			default:
				r.collective(a)
				var cost float64
				switch {
				case a.Kind == strategy.AllReduce && a.Layered:
					// Layered SGD: the communicators' all-reduce overlaps the
					// workers' preparation of their next batch.
					red, bc, inter := net.HierarchicalParts(r.bytes, n)
					prep := 0.0
					for _, d := range r.devs {
						prep = max(prep, r.cfg.Prep*float64(d.rows)/d.speed)
						d.prepared = true
					}
					cost = red + max(inter, prep) + bc
				default:
					cost = net.AllReduceCost(net.AllReduce, r.bytes, n)
				}
				switch a.Kind {
				case strategy.AllReduce: // every device applies the update, in parallel
					cost += r.cfg.Cost.Update(r.shape)
				case strategy.Merge, strategy.CenterSync: // a few element-wise passes
					cost += 3 * r.cfg.Cost.Update(r.shape)
				}
				schedule(t+cost, strategy.Event{Kind: strategy.CollectiveDone})
			}
		}
		if r.info.Async && e.ev.Kind == strategy.BatchDone {
			if err := r.evaluate(false); err != nil {
				return err
			}
		}
	}
	return r.evaluate(true)
}
