package engine

import (
	"context"
	"math"

	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// A virtual-time event: something the strategy learns at time t. Ties are
// broken by the order events were scheduled, so a run is deterministic.
type vevent struct {
	t   float64
	seq int64
	ev  strategy.Event
	// fault, when not zero, makes this the strike of r.faults[fault−1]
	// (giveUp: the end of a stalled device's timeout) rather than news for
	// the strategy.
	fault  int
	giveUp bool
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

// virtualClock is the discrete-event simulation, in one process. Work is
// computed for real when it starts (a device's replica is its own until its
// batch completes, and collectives happen only when every device is idle, so
// computing early changes nothing); its completion is an event at start +
// cost, from the cost model for batches and the network model for
// collectives. Evaluation happens when a collective completes (for async
// strategies, after any event), with the clock stopped by nature.
type virtualClock struct {
	r          *run
	t          float64
	seq        int64
	q          vqueue
	serverFree float64   // when the parameter server's link frees up
	netFree    float64   // when the network is through with the ops' all-reduces in flight (Cost.Started)
	ready      []float64 // when each device's last commit's messages reach it (Cost.Transfers)
	// pending counts the queued events that are work or news; strikes of
	// faults are not, so a run whose work is done ends without waiting for
	// a fault that would come later.
	pending int
	faults  []Fault
	last    vevent // the event next returned last (a checkpoint puts it back)
}

func newVirtualClock(r *run) *virtualClock {
	v := &virtualClock{r: r, faults: sortedFaults(r.cfg.Faults), ready: make([]float64, r.cfg.Devices)}
	for i, f := range v.faults {
		v.seq++
		v.q.push(vevent{t: f.At, seq: v.seq, fault: i + 1})
	}
	return v
}

func (v *virtualClock) now() float64 { return v.t }

func (v *virtualClock) schedule(at float64, ev strategy.Event) {
	v.seq++
	v.pending++
	v.q.push(vevent{t: at, seq: v.seq, ev: ev})
}

func (v *virtualClock) dispatch(w work) error {
	r := v.r
	b := r.job.runNow(w, !r.cfg.TimingOnly, r.cfg.Noise)
	net := r.cfg.Net
	n := r.cfg.Devices
	start := max(v.t, v.ready[w.dev])
	if w.mode == strategy.Pull {
		// The commit of the previous update and this pull queue on the
		// parameter server's link.
		start = max(v.t, v.serverFree)
		v.serverFree = start + 2*float64(r.bytes)/net.Link(n).Bandwidth
		start = v.serverFree + 2*net.Link(n).Latency
	}
	cost := r.cfg.Cost.BatchWork(r.shape, b.rows, b.nnz, b.work)
	if b.localStep {
		cost += r.cfg.Cost.UpdateWork(r.shape, b.work)
	}
	if !b.prepared {
		cost += r.cfg.Prep * float64(b.rows)
	}
	v.schedule(start+cost/b.speed*b.noise, strategy.Event{Kind: strategy.BatchDone, Device: b.dev})
	return nil
}

func (v *virtualClock) started(int) { panic("engine: the virtual clock starts every batch itself") }

// committed queues a commit's messages (its op's Cost.Transfers) on the
// server's link: the device's next batch starts when they are through.
func (v *virtualClock) committed(a *strategy.Action) {
	r := v.r
	op, err := r.job.op(a.Op)
	if err != nil {
		panic(err) // the commit was carried out with it just before
	}
	tr := op.Cost(a).Transfers
	if tr <= 0 {
		return
	}
	link := r.cfg.Net.Link(r.cfg.Devices)
	start := max(v.t, v.serverFree)
	v.serverFree = start + tr*float64(r.bytes)/link.Bandwidth
	v.ready[a.Device] = v.serverFree + tr*link.Latency
}

// after schedules ev once a's cost has passed.
func (v *virtualClock) after(a *strategy.Action, ev strategy.Event) {
	if a == nil {
		v.schedule(v.t, ev)
		return
	}
	v.schedule(v.t+v.cost(a), ev)
}

// cost is the network model's time for action a: an all-reduce (Layered
// SGD's overlapping the workers' preparation of their next batch) followed
// by every device's update, or what the action's op costs in those
// primitives.
func (v *virtualClock) cost(a *strategy.Action) float64 {
	r := v.r
	net, n := r.cfg.Net, r.cfg.Devices
	if a.Kind == strategy.AllReduce {
		// The update: the rows the batches touched under a lazy rule, else
		// every parameter.
		update := r.cfg.Cost.UpdateWork(r.shape, workload.Work{Touched: r.job.applied()})
		if !a.Layered {
			return net.AllReduceCost(net.AllReduce, r.bytes, n) + update
		}
		red, bc, inter := net.HierarchicalParts(r.bytes, n)
		prep := r.job.prepareNext(r.cfg.Prep)
		return red + max(inter, prep) + bc + update
	}
	op, err := r.job.op(a.Op)
	if err != nil {
		panic(err) // the action was carried out with it just before
	}
	c := op.Cost(a)
	// The collectives an op left in flight hold the network until
	// v.netFree: an op's action that awaits them, or uses the network,
	// starts once they are through. (Only ops leave any in flight, and the
	// other actions never meet them.)
	var wait float64
	if c.Awaits || c.AllReduces > 0 || c.Gather > 0 || c.GatherModel > 0 {
		wait = max(0, v.netFree-v.t)
	}
	cost := v.allReduces(c.AllReduces) + v.gathers(c.GatherModel)
	if c.Gather > 0 {
		cost += net.AllGatherCost(c.Gather, n)
	}
	cost += c.Passes * r.cfg.Cost.Update(r.shape)
	if c.Started > 0 || c.StartedGather > 0 {
		// Started once the action is done, carried while the devices
		// compute.
		v.netFree = max(v.netFree, v.t+wait+cost) + v.allReduces(c.Started) + v.gathers(c.StartedGather)
	}
	return wait + cost
}

// gathers is the network model's time for an all-gather of the fraction k
// of the model's bytes from every device.
func (v *virtualClock) gathers(k float64) float64 {
	if k <= 0 {
		return 0
	}
	return v.r.cfg.Net.AllGatherCost(int(math.Ceil(k*float64(v.r.bytes))), v.r.cfg.Devices)
}

// allReduces is the network model's time for k all-reduces of the model:
// whole ones, then one of the fraction of the model's bytes left.
func (v *virtualClock) allReduces(k float64) float64 {
	if k <= 0 {
		return 0
	}
	net, n, bytes := v.r.cfg.Net, v.r.cfg.Devices, v.r.bytes
	whole := math.Floor(k)
	cost := whole * net.AllReduceCost(net.AllReduce, bytes, n)
	if part := k - whole; part > 0 {
		cost += net.AllReduceCost(net.AllReduce, int(math.Ceil(part*float64(bytes))), n)
	}
	return cost
}

func (v *virtualClock) next(ctx context.Context) (strategy.Event, bool, error) {
	if err := ctx.Err(); err != nil {
		return strategy.Event{}, false, err
	}
	for v.pending > 0 {
		e := v.q.pop()
		v.t = e.t
		if e.fault > 0 {
			if ev, ok := v.fault(e); ok {
				return ev, true, nil
			}
			continue
		}
		v.pending--
		if e.ev.Kind == strategy.BatchDone {
			if v.r.members.silenced(e.ev.Device) {
				continue // a stalled or departed device's batch never reports
			}
			v.r.slots[e.ev.Device].loss = v.r.job.lastLoss(e.ev.Device)
		}
		v.last = e
		return e.ev, true, nil
	}
	return strategy.Event{}, false, nil
}

// fault strikes the fault of e, or gives up on a stalled device, and returns
// the strategy's news of a departure.
func (v *virtualClock) fault(e vevent) (strategy.Event, bool) {
	f := v.faults[e.fault-1]
	if e.giveUp {
		v.pending-- // the give-up was work: a barrier may wait for it
		return leaveEvent(f.Device), v.r.leave(f.Device, f.Kind, v.t)
	}
	if v.r.members.gone(f.Device) {
		return strategy.Event{}, false
	}
	leave, giveUpAt := v.r.strike(f, v.t)
	if giveUpAt > 0 {
		v.seq++
		v.pending++
		v.q.push(vevent{t: giveUpAt, seq: v.seq, fault: e.fault, giveUp: true})
	}
	return leaveEvent(f.Device), leave && v.r.leave(f.Device, f.Kind, v.t)
}

// computing: a batch is computed when it is dispatched.
func (v *virtualClock) computing(int) bool { return false }

func (v *virtualClock) pause(f func() error) error { return f() }
func (v *virtualClock) drain()                     {}
