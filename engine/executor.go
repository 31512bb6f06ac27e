package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/hugepage"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
)

// executor holds one rank's devices — replicas, gradients, optimizer state,
// workers — and the rank's copy of the centre model, and carries out what
// the driver asks of them: it loads and runs batches, all-reduces and
// applies gradients, and runs the strategies' ops (strategy.Op) — lending
// them its vectors and the world as a strategy.Host — for their
// collectives, queries and commits. An in-process run has one executor
// holding every device over comm.Self; a distributed run has one per rank,
// each holding devices first…first+K−1.
//
// The ops' state vectors live with what they belong to: a device's with
// the device (Replica.State), the centre's (Host.CenterState) on every
// rank, which computes it identically from all-reduced values.
type executor struct {
	cfg   Config
	w     Workload
	world comm.Comm
	n     int       // devices in the job
	first int       // id of devs[0]
	devs  []*device // this rank's devices
	// members says who is in the run (faults; in-process runs only):
	// every collective and query leaves the gone out, and nothing touches
	// their replicas, which a lost batch may still be computing on. The
	// driver holds the same record.
	members    *membership
	stream     *data.Sampler
	center     []float32 // w̄, z or the parameter server's θ (rank 0's)
	prev       []float32 // the centre before the last Advance
	scratch    []float32
	cstate     []float32 // the ops' vector beside the centre (Host.CenterState), allocated at its first use
	pending    []float32 // the ops' vector for reductions in flight (Host.Pending), allocated at its first use
	inflight   works     // the ops' collectives in flight
	ops        map[string]strategy.Op
	reps       []strategy.Replica // Replicas' list
	act        strategy.Action    // the action an op carries out (a field: passed to an interface, a local would escape)
	vecs       [][]float32
	weights    []float32
	part       []float64 // per local device
	partSecond []float64 // per local device: a query's second value
	values     []float64 // per device of the job: gathered norms or coefficients
	valuesTwo  []float64 // per device of the job: the same, gathered
	// A rank's part and partSecond side by side, and every rank's, for one
	// all-gather of both (distributed runs).
	pairs, pairsAll []float64
	// lazy marks and lists the rows the devices' last batches touched
	// (LazyApplier), when the workers update lazily; nil otherwise.
	lazy *lazyRows
	// applied is the parameters the last all-reduce's update changed (the
	// union of the rows its gradients touched), 0 when it changed every one.
	applied int64

	// hurry is closed, once, when the run stops early (hurryDevices):
	// by the driver, and on every rank by the run's context.
	hurry     chan struct{}
	hurryOnce sync.Once
	// snap holds the books of this rank's devices at the checkpoint being
	// taken (other ranks than 0: between cmdSnapshot and cmdVectors).
	snap []deviceState

	// Layered SGD: this rank's node and, on each node's first rank, the
	// group of the nodes' communicators (made at the first layered
	// all-reduce, when every rank reaches it together); the inter-node
	// all-reduce under way, the function that polls it, and where the time
	// went.
	node, leaders comm.Comm
	nodesMade     bool
	req           comm.Request
	reqErr        error
	poll          func()
	lay           LayeredTiming
}

// LayeredTiming is where a rank's time went in Layered SGD's all-reduces
// across ranks, in seconds summed over Steps: the reduce within its node,
// the preparation of the next batches while the nodes' communicators
// all-reduce, the wait for that all-reduce after it, and the broadcast back.
// When Overlap hides the all-reduce, Wait is near zero.
type LayeredTiming struct {
	Steps                            int64
	Reduce, Overlap, Wait, Broadcast float64
}

func newExecutor(cfg Config, w Workload, world comm.Comm, maxBatch int) (*executor, error) {
	k := cfg.Devices / world.Size()
	x := &executor{cfg: cfg, w: w, world: world, n: cfg.Devices, first: world.Rank() * k, members: newMembership(cfg.Devices),
		stream: data.NewSampler(w.Size(), samplerSeed(cfg.Seed)),
		part:   make([]float64, k), partSecond: make([]float64, k),
		values: make([]float64, cfg.Devices), valuesTwo: make([]float64, cfg.Devices),
		pairs: make([]float64, 2*k), pairsAll: make([]float64, 2*cfg.Devices),
		weights: make([]float32, 0, k+2), vecs: make([][]float32, 0, k+2),
		ops: map[string]strategy.Op{}, reps: make([]strategy.Replica, 0, k), hurry: make(chan struct{})}
	n := w.NumParams()
	var init []float32
	if !cfg.TimingOnly {
		init = make([]float32, n)
		w.Init(init, initSeed(cfg.Seed))
		x.center = slices.Clone(init)
		x.prev = slices.Clone(init)
		x.scratch = make([]float32, n)
	}
	// Under the virtual clock devices compute one at a time and may share
	// scratch space.
	shared := cfg.Clock == Virtual
	for id := x.first; id < x.first+k; id++ {
		worker, err := w.NewWorker(maxBatch, dropoutSeed(cfg.Seed, id), shared)
		if err != nil {
			return nil, err
		}
		src := rand.NewPCG(noiseSeed(cfg.Seed, id), 1)
		d := &device{id: id, speed: cfg.speed(id), worker: worker, noise: rand.New(src), noiseSrc: src}
		if cfg.Clock == Real {
			d.prep = cfg.Prep
		}
		if !cfg.TimingOnly {
			d.p, d.g = hugepage.Clone(init), hugepage.Floats(n)
			d.opt, _ = optim.New(cfg.Optimizer, n)
		}
		x.devs = append(x.devs, d)
	}
	if la, ok := x.devs[0].worker.(LazyApplier); ok && la.Lazy() && !cfg.TimingOnly {
		// Every rank decides alike: its workers are the same workload's.
		x.lazy = newLazyRows(la.MaskLen())
		for _, d := range x.devs {
			d.lazy = x.lazy
		}
	}
	x.poll = func() {
		if x.req != nil && x.reqErr == nil {
			_, x.reqErr = x.req.Test()
		}
	}
	return x, nil
}

// startDevices gives every device a goroutine (real clock): it computes
// each batch it is handed, waits out its slowdown — with speeds relative to
// the fastest device of the job, a device of speed s stretches its batch to
// fastest/s of its compute time — and reports with report.
func (x *executor) startDevices(report func(*device)) {
	fastest := 0.0
	for id := 0; id < x.n; id++ {
		fastest = max(fastest, x.cfg.speed(id))
	}
	for _, d := range x.devs {
		d.jobs = make(chan struct{}, 1)
		d.stretch = fastest / d.speed
		d.stretchBits.Store(math.Float64bits(d.stretch))
		go d.work(d.jobs, x.hurry, report)
	}
}

// hurryDevices makes the devices skip what is left of their injected
// slow-downs and simulated decoding — theirs, and the next batches'
// prepared during a layered all-reduce — for a run that stops early (a
// signal, an error): a device slowed a thousandfold would otherwise hold
// the run's end, and its done record, for minutes. Safe from any
// goroutine, any number of times.
func (x *executor) hurryDevices() { x.hurryOnce.Do(func() { close(x.hurry) }) }

// run starts the batch loaded on d on its goroutine.
func (x *executor) run(d *device) { d.jobs <- struct{}{} }

// stopDevices ends the devices' goroutines; no batch may be under way.
func (x *executor) stopDevices() {
	for _, d := range x.devs {
		if d.jobs != nil {
			close(d.jobs)
			d.jobs = nil
		}
	}
}

// local returns device id if this rank holds it, else nil.
func (x *executor) local(id int) *device {
	if i := id - x.first; i >= 0 && i < len(x.devs) {
		return x.devs[i]
	}
	return nil
}

// work is one dispatched batch as an executor needs it: the device, where
// the batch starts in the shared stream and how many rows it has, the rate
// and the mode. Any rank draws the same rows from it.
type work struct {
	dev  int
	pos  int64
	rows int
	lr   float64
	mode strategy.Mode
}

// load draws a batch for d from this rank's copy of the shared stream and,
// under Pull on the rank that holds θ, copies θ into the replica.
func (x *executor) load(d *device, w work) { x.loadPolled(d, w, nil) }

// loadPolled is load calling poll between the steps of the preparation.
func (x *executor) loadPolled(d *device, w work, poll func()) {
	x.stream.SetPos(w.pos)
	if pl, ok := d.worker.(PolledLoader); ok && poll != nil {
		pl.LoadPolled(x.stream, w.rows, poll)
	} else {
		d.worker.Load(x.stream, w.rows)
	}
	d.lr, d.mode, d.rows = float32(w.lr), w.mode, w.rows
	if w.mode == strategy.Pull && !x.cfg.TimingOnly && x.world.Rank() == 0 {
		copy(d.p, x.center)
	}
}

// localGrads returns this rank's gradients and their weights from w, a
// weight per device of the job (nil: 1/n each, the mean).
func (x *executor) localGrads(w []float64) ([]float32, [][]float32) {
	x.weights, x.vecs = x.weights[:0], x.vecs[:0]
	for _, d := range x.devs {
		if x.members.gone(d.id) {
			continue
		}
		wi := 1 / float32(x.live())
		if w != nil {
			wi = float32(w[d.id])
		}
		x.weights = append(x.weights, wi)
		x.vecs = append(x.vecs, d.g)
	}
	return x.weights, x.vecs
}

// collective carries out a collective command on this rank.
func (x *executor) collective(c *command) error {
	switch c.kind {
	case cmdAllReduce:
		return x.allReduce(c.lr, c.weights, c.layered, c.next)
	case cmdCollective:
		op, err := x.op(c.op)
		if err != nil {
			return err
		}
		col, ok := op.(strategy.Collector)
		if !ok {
			return fmt.Errorf("engine: op %s is not a collective", c.op)
		}
		if x.cfg.TimingOnly {
			return nil
		}
		x.act = c.action(strategy.Collective)
		if err := col.Collect(x, &x.act); err != nil {
			return fmt.Errorf("engine: %s: %w", c.op, err)
		}
		return nil
	}
	panic(fmt.Sprintf("engine: command %d is not a collective", c.kind))
}

// op returns this rank's instance of the op registered as name.
func (x *executor) op(name string) (strategy.Op, error) {
	if op, ok := x.ops[name]; ok {
		return op, nil
	}
	op, err := strategy.NewOp(name)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if x.ops == nil {
		x.ops = map[string]strategy.Op{}
	}
	x.ops[name] = op
	return op, nil
}

// The executor as a strategy.Host: what its ops see of the rank.

func (x *executor) Rank() int  { return x.world.Rank() }
func (x *executor) Ranks() int { return x.world.Size() }
func (x *executor) Live() int  { return x.live() }

func (x *executor) Replicas() []strategy.Replica {
	x.reps = x.reps[:0]
	for _, d := range x.devs {
		if !x.members.gone(d.id) {
			x.reps = append(x.reps, d)
		}
	}
	return x.reps
}

func (x *executor) Center() []float32  { return x.center }
func (x *executor) Prev() []float32    { return x.prev }
func (x *executor) Scratch() []float32 { return x.scratch }
func (x *executor) Seed() uint64       { return x.cfg.Seed }

// Advance rotates the three vectors: no copy.
func (x *executor) Advance() { x.prev, x.center, x.scratch = x.center, x.scratch, x.prev }

func (x *executor) CenterState() []float32 {
	if x.cstate == nil && x.center != nil {
		x.cstate = make([]float32, len(x.center))
	}
	return x.cstate
}

func (x *executor) AllReduce(v []float32) error {
	if x.world.Size() == 1 {
		return nil
	}
	return x.world.AllReduce(v)
}

func (x *executor) WeightedAllReduce(out []float32, w []float32, vecs [][]float32) error {
	return comm.WeightedAllReduce(x.world, out, w, vecs)
}

// allReduce is an AllReduce action: the weighted sum of every device's
// gradient, applied by every device's optimizer. layered takes Layered SGD's
// path across ranks; next are this rank's batches to prepare while it runs,
// started once the update is applied.
func (x *executor) allReduce(lr float64, weights []float64, layered bool, next []work) error {
	for _, wk := range next {
		if wk.mode != strategy.Gradient {
			panic("engine: only gradient batches can be prepared during an all-reduce")
		}
	}
	x.applied = 0
	if x.cfg.TimingOnly {
		return nil
	}
	if z := x.lazy; z != nil {
		// The lazy rule: the rows any device's batch touched, marked before
		// a next batch replaces the one a worker holds, and listed once for
		// every device of the rank.
		clear(z.mask)
		for _, d := range x.devs {
			// A device whose gradient weighs nothing (AdaCons's of a zero
			// gradient) touched no row of the sum.
			if !x.members.gone(d.id) && (weights == nil || weights[d.id] != 0) {
				z.mark(d.worker.(LazyApplier))
			}
		}
		if x.world.Size() > 1 {
			if err := x.world.AllReduce(z.mask); err != nil {
				return fmt.Errorf("engine: the rows the batches touched: %w", err)
			}
		}
		z.list()
	}
	g := x.devs[0].g
	loaded := false
	if x.n > 1 || weights[0] != 1 {
		g = x.scratch
		w, vecs := x.localGrads(weights)
		var err error
		if layered && x.world.Size() > 1 {
			err, loaded = x.layered(g, w, vecs, next), true
		} else {
			err = comm.WeightedAllReduce(x.world, g, w, vecs)
		}
		if err != nil {
			return err
		}
	}
	if !loaded {
		for _, wk := range next {
			x.load(x.local(wk.dev), wk)
		}
	}
	step := float32(lr)
	if x.cfg.LineSearch {
		// The exact step along −g from the (common) model.
		step = float32(x.w.(LineSearcher).Step(x.devs[0].p, g))
	}
	for _, d := range x.devs {
		if x.members.gone(d.id) {
			continue
		}
		if x.lazy == nil {
			d.opt.Step(d.p, g, step)
			continue
		}
		// The summed gradient, applied as one device's Step on the union
		// of the batches would apply it (the sampled layer's lazy rule):
		// rows no device touched keep their weights and moments.
		d.upd = d.opt.Fused(step)
		d.worker.(LazyApplier).ApplyRows(d.p, g, x.lazy.rows, &d.upd)
		if a, ok := d.worker.(Accountant); ok {
			x.applied = a.LastWork().Touched
		}
	}
	for _, wk := range next {
		x.run(x.local(wk.dev))
	}
	return nil
}

// layered is Layered SGD's all-reduce across ranks: each rank's part is
// reduced to its node's first rank (the node's communicator), the
// communicators all-reduce among themselves without blocking while every
// rank prepares its next batches (polling the all-reduce between them, since
// MPI progresses it only when asked), and each communicator broadcasts the
// sum back to its node.
func (x *executor) layered(g []float32, w []float32, vecs [][]float32, next []work) error {
	t0 := time.Now()
	kernel.WeightedSum(g, w, vecs)
	if err := x.makeNodes(); err != nil {
		return err
	}
	if err := x.node.Reduce(g, 0); err != nil {
		return fmt.Errorf("engine: layered all-reduce, reduce within the node: %w", err)
	}
	t1 := time.Now()
	x.req, x.reqErr = nil, nil
	if x.leaders != nil {
		var err error
		if x.req, err = x.leaders.IAllReduce(g); err != nil {
			return fmt.Errorf("engine: layered all-reduce among the nodes: %w", err)
		}
	}
	// The rank's devices decode their batches side by side, as each does
	// before its batch otherwise: the rank spends the slowest one's time,
	// stretched by its speed like the rest of its batch.
	var prep time.Duration
	for _, wk := range next {
		d := x.local(wk.dev)
		x.loadPolled(d, wk, x.poll)
		if d.prep > 0 {
			prep = max(prep, time.Duration(d.prep*float64(d.rows)*d.stretch*1e9))
			d.prepared = true
		}
	}
	if prep > 0 {
		busy(prep, x.poll, x.hurry)
	}
	t2 := time.Now()
	if x.req != nil {
		err := x.req.Wait()
		if x.reqErr != nil {
			err = x.reqErr
		}
		if err != nil {
			return fmt.Errorf("engine: layered all-reduce among the nodes: %w", err)
		}
		x.req = nil
	}
	t3 := time.Now()
	if err := x.node.Broadcast(g, 0); err != nil {
		return fmt.Errorf("engine: layered all-reduce, broadcast within the node: %w", err)
	}
	x.lay.Steps++
	x.lay.Reduce += t1.Sub(t0).Seconds()
	x.lay.Overlap += t2.Sub(t1).Seconds()
	x.lay.Wait += t3.Sub(t2).Seconds()
	x.lay.Broadcast += time.Since(t3).Seconds()
	return nil
}

// busy spends d of CPU time, as decoding a batch would, calling poll (when
// not nil) every 2 µs: OpenMPI's MPI_Iallreduce advances a round per
// MPI_Test, and polls every 5 or 20 µs left 0.3 or 0.55 ms of a Delicious
// gradient's all-reduce to wait for after 1.3 ms of preparation, 2 µs a
// median 0.16 ms (BENCHMARKS.md §7).
func busy(d time.Duration, poll func(), hurry <-chan struct{}) {
	end := time.Now().Add(d)
	next := time.Now()
	for now := next; now.Before(end); now = time.Now() {
		select {
		case <-hurry:
			return
		default:
		}
		if poll != nil && !now.Before(next) {
			poll()
			next = now.Add(2 * time.Microsecond)
		}
	}
}

// makeNodes splits the ranks into nodes — groups of Net.GroupSize devices
// when --groups or --topology set it, else the ranks sharing a host — and
// the nodes' first ranks into the communicators' group.
func (x *executor) makeNodes() error {
	if x.nodesMade {
		return nil
	}
	x.nodesMade = true
	k := len(x.devs)
	var color int
	if gs := x.cfg.Net.GroupSize; gs > 0 {
		color = x.first / gs
	} else {
		hosts, err := comm.Hosts(x.world)
		if err != nil {
			return fmt.Errorf("engine: grouping the ranks by host: %w", err)
		}
		color = hosts[x.world.Rank()]
	}
	var err error
	if x.node, err = x.world.Split(color, x.world.Rank()); err != nil {
		return fmt.Errorf("engine: making the nodes of %d devices: %w", k, err)
	}
	lead := -1
	if x.node.Rank() == 0 {
		lead = 0
	}
	if x.leaders, err = x.world.Split(lead, x.world.Rank()); err != nil {
		return fmt.Errorf("engine: making the group of the nodes' communicators: %w", err)
	}
	return nil
}

// close frees the communicators the executor made (every rank calls it at
// the end of a run).
func (x *executor) close() {
	// A collective in flight at the end completes before its vector and
	// the transport go (an error of it has nothing left to spoil).
	_ = x.settle()
	for _, d := range x.devs {
		if c, ok := d.worker.(Closer); ok {
			c.Close() // a background build joins the run's end
		}
	}
	for _, c := range []comm.Comm{x.node, x.leaders} {
		if c != nil {
			c.Close()
		}
	}
	x.node, x.leaders, x.nodesMade = nil, nil, false
}

// live returns the number of devices still in the run.
func (x *executor) live() int { return x.members.Live() }

// spreadLive moves values computed for this rank's live devices, the
// first live of v in order, to those devices' places in v, with NaN for the
// devices that left (in place, from the end, so nothing is overwritten
// before it is moved).
func (x *executor) spreadLive(v []float64, live int) {
	j := live - 1
	for i := len(x.devs) - 1; i >= 0; i-- {
		if x.members.gone(x.devs[i].id) {
			v[i] = math.NaN()
			continue
		}
		v[i] = v[j]
		j--
	}
}

// gatherPairs all-gathers two local values per device, x.part and
// x.partSecond, into x.values and x.valuesTwo in one all-gather (one latency,
// not two): each rank sends both side by side, and the rank-major result is
// split back.
func (x *executor) gatherPairs() error {
	if x.world.Size() == 1 {
		copy(x.values, x.part)
		copy(x.valuesTwo, x.partSecond)
		return nil
	}
	k := len(x.devs)
	copy(x.pairs, x.part)
	copy(x.pairs[k:], x.partSecond)
	if err := x.world.AllGather(x.pairsAll, x.pairs); err != nil {
		return err
	}
	for r := range x.world.Size() {
		copy(x.values[r*k:(r+1)*k], x.pairsAll[2*r*k:])
		copy(x.valuesTwo[r*k:(r+1)*k], x.pairsAll[(2*r+1)*k:])
	}
	return nil
}

// query answers a query command on every rank: its op measures two values
// per live device of the rank, and they are gathered, NaN for the devices
// that left, for every device of the job.
func (x *executor) query(c *command) (values, second []float64, err error) {
	op, err := x.op(c.op)
	if err != nil {
		return nil, nil, err
	}
	m, ok := op.(strategy.Measurer)
	if !ok {
		return nil, nil, fmt.Errorf("engine: op %s is not a query", c.op)
	}
	x.act = c.action(strategy.Query)
	live := len(x.Replicas())
	if err := m.Measure(x, &x.act, x.part[:live], x.partSecond[:live]); err != nil {
		return nil, nil, fmt.Errorf("engine: %s: %w", c.op, err)
	}
	x.spreadLive(x.part, live)
	x.spreadLive(x.partSecond, live)
	if err := x.gatherPairs(); err != nil {
		return nil, nil, fmt.Errorf("engine: gathering the answers of %s: %w", c.op, err)
	}
	return x.values, x.valuesTwo, nil
}

// committer returns the op of a commit.
func (x *executor) committer(name string) (strategy.Committer, error) {
	op, err := x.op(name)
	if err != nil {
		return nil, err
	}
	cm, ok := op.(strategy.Committer)
	if !ok {
		return nil, fmt.Errorf("engine: op %s does not commit", name)
	}
	return cm, nil
}

// commit applies device d's update to θ in this process (the device and θ
// on the same rank) by the action's op, restarts the device from θ when
// the op says so, and returns the op's statistic.
func (x *executor) commit(d *device, a *strategy.Action) (float64, error) {
	cm, err := x.committer(a.Op)
	if err != nil {
		return 0, err
	}
	var stat float64
	if lc, ok := cm.(strategy.LocalCommitter); ok {
		stat = lc.CommitLocal(x, d, a)
	} else {
		var theta []float32
		if cm.NeedsCenter(a) {
			theta = x.center
		}
		stat = cm.Delta(x, d, a, theta)
		cm.Apply(x, a, d.g)
		d.written = true
	}
	if rs, ok := cm.(strategy.Restarter); ok {
		rs.Restart(x, d, a, x.center)
	}
	return stat, nil
}

// update is the worker's half of a commit to a θ held by another rank: it
// turns d's gradient, in place, into the update the server applies.
// theta is the centre as last received, when the op asked for it.
func (x *executor) update(d *device, a *strategy.Action, theta []float32) (float64, error) {
	cm, err := x.committer(a.Op)
	if err != nil {
		return 0, err
	}
	return cm.Delta(x, d, a, theta), nil
}
