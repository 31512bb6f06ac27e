package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
)

// executor holds one rank's devices — replicas, gradients, optimizer state,
// workers — and the rank's copy of the centre model, and carries out what
// the driver asks of them: it loads and runs batches and takes part in
// collectives over comm. Every action's arithmetic lives here, once. An
// in-process run has one executor holding every device over comm.Self; a
// distributed run has one per rank, each holding devices first…first+K−1.
//
// Algorithm state that belongs to devices lives with them (GEM's momentum m,
// the sample of parameters π is measured on); state of the centre
// (w̄_p, CROSSBOW's D_prev) is computed identically on every rank from
// all-reduced values, so any rank holds it.
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
	members   *membership
	stream    *data.Sampler
	center    []float32 // w̄, z or the parameter server's θ (rank 0's)
	prev      []float32 // w̄_p
	scratch   []float32
	dprev     []float32 // CROSSBOW's D_prev
	vecs      [][]float32
	weights   []float32
	part      []float64 // per local device
	partNorms []float64 // per local device: a query's second value (the gradients' norms of a consensus; the replicas' way along the momentum)
	dots      []float64
	values    []float64 // per device of the job: gathered norms or coefficients
	gradNorms []float64 // per device of the job: the same, gathered
	// A rank's part and partNorms side by side, and every rank's, for one
	// all-gather of both (distributed runs).
	pairs, pairsAll []float64

	pi piSample
	// hurry is closed when the run stops early (hurryDevices).
	hurry chan struct{}
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
		part:   make([]float64, k), partNorms: make([]float64, k), dots: make([]float64, k),
		values: make([]float64, cfg.Devices), gradNorms: make([]float64, cfg.Devices),
		pairs: make([]float64, 2*k), pairsAll: make([]float64, 2*cfg.Devices),
		weights: make([]float32, 0, k+2), vecs: make([][]float32, 0, k+2)}
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
			d.p, d.g = slices.Clone(init), make([]float32, n)
			d.opt, _ = optim.New(cfg.Optimizer, n)
		}
		x.devs = append(x.devs, d)
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
	x.hurry = make(chan struct{})
	for _, d := range x.devs {
		d.jobs = make(chan struct{}, 1)
		d.stretch = fastest / d.speed
		d.stretchBits.Store(math.Float64bits(d.stretch))
		go d.work(d.jobs, x.hurry, report)
	}
}

// hurryDevices makes the devices skip what is left of their injected
// slow-downs and simulated decoding, for a run that stops early (a signal,
// an error): a device slowed a thousandfold would otherwise hold the run's
// end, and its done record, for minutes.
func (x *executor) hurryDevices() {
	if x.hurry != nil {
		select {
		case <-x.hurry:
		default:
			close(x.hurry)
		}
	}
}

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
	case cmdMerge:
		return x.merge(c.weights, c.gamma)
	case cmdCenterSync:
		return x.sma(c.a, c.gamma, c.lr, c.withGrad)
	}
	panic(fmt.Sprintf("engine: command %d is not a collective", c.kind))
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
	if x.cfg.TimingOnly {
		return nil
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
		if !x.members.gone(d.id) {
			d.opt.Step(d.p, g, step)
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
	for _, c := range []comm.Comm{x.node, x.leaders} {
		if c != nil {
			c.Close()
		}
	}
	x.node, x.leaders, x.nodesMade = nil, nil, false
}

// merge is a Merge action: w̄' = γ(w̄ − w̄_p) + Σ α_i w_i in one pass (the
// γ terms counted once, on rank 0), w̄_p ← w̄, w̄ ← w̄', every replica ← w̄.
func (x *executor) merge(weights []float64, gamma float64) error {
	if x.cfg.TimingOnly {
		return nil
	}
	x.weights, x.vecs = x.weights[:0], x.vecs[:0]
	if x.world.Rank() == 0 {
		x.weights = append(x.weights, float32(gamma), float32(-gamma))
		x.vecs = append(x.vecs, x.center, x.prev)
	}
	for _, d := range x.devs {
		if !x.members.gone(d.id) {
			x.weights = append(x.weights, float32(weights[d.id]))
			x.vecs = append(x.vecs, d.p)
		}
	}
	if err := comm.WeightedAllReduce(x.world, x.scratch, x.weights, x.vecs); err != nil {
		return fmt.Errorf("engine: merging the replicas: %w", err)
	}
	x.prev, x.center, x.scratch = x.center, x.scratch, x.prev
	for _, d := range x.devs {
		if !x.members.gone(d.id) {
			copy(d.p, x.center)
		}
	}
	return nil
}

// centerSync is CROSSBOW's correction alone, the replicas' local steps
// already taken (the order of --correct-after 1): sma without a gradient.
func (x *executor) centerSync(a, gamma float64) error { return x.sma(a, gamma, 0, false) }

// sma is a CenterSync action, CROSSBOW's step: D = γ·D_prev + Σ a·(w_i − z)
// (γ·D_prev counted once, on rank 0); w_i ← w_i − a·(w_i − z); z ← z + D.
// withGrad makes it the paper's combined step: d_i = w_i − z is measured
// first, then the device's optimizer applies the gradient g_i that was
// computed on that same w_i at rate lr, then the correction −a·d_i is added.
func (x *executor) sma(a, gamma, lr float64, withGrad bool) error {
	if x.cfg.TimingOnly {
		return nil
	}
	if x.dprev == nil {
		x.dprev = make([]float32, len(x.center))
	}
	if x.world.Rank() == 0 {
		kernel.Scal(float32(gamma), x.dprev)
	} else {
		clear(x.dprev)
	}
	for _, d := range x.devs {
		if x.members.gone(d.id) {
			continue
		}
		copy(x.scratch, d.p)
		kernel.Axpy(-1, x.center, x.scratch) // d_i = w_i − z
		kernel.Axpy(float32(a), x.scratch, x.dprev)
		if withGrad {
			// The step from w_i itself (momentum, Adam's moments and
			// weight decay all see the iterate the gradient came from);
			// the correction, measured before it, is added after.
			d.opt.Step(d.p, d.g, float32(lr))
		}
		kernel.Axpy(float32(-a), x.scratch, d.p)
	}
	if x.world.Size() > 1 {
		if err := x.world.AllReduce(x.dprev); err != nil {
			return fmt.Errorf("engine: CROSSBOW's synchronisation: %w", err)
		}
	}
	kernel.Axpy(1, x.dprev, x.center)
	return nil
}

// live returns the number of devices still in the run.
func (x *executor) live() int { return x.members.Live() }

// spreadLive moves values computed for the live devices, in order, to those
// devices' places in v, with NaN for the devices that left (in place, from
// the end, so nothing is overwritten before it is moved).
func (x *executor) spreadLive(v []float64) {
	j := x.live() - 1
	for i := len(x.devs) - 1; i >= 0; i-- {
		if x.members.gone(x.devs[i].id) {
			v[i] = math.NaN()
			continue
		}
		v[i] = v[j]
		j--
	}
}

// gather all-gathers the local values x.part into x.values.
func (x *executor) gather() error {
	if x.world.Size() == 1 {
		copy(x.values, x.part)
		return nil
	}
	return x.world.AllGather(x.values, x.part)
}

// gatherPairs all-gathers two local values per device, x.part and
// x.partNorms, into x.values and x.gradNorms in one all-gather (one latency,
// not two): each rank sends both side by side, and the rank-major result is
// split back.
func (x *executor) gatherPairs() error {
	if x.world.Size() == 1 {
		copy(x.values, x.part)
		copy(x.gradNorms, x.partNorms)
		return nil
	}
	k := len(x.devs)
	copy(x.pairs, x.part)
	copy(x.pairs[k:], x.partNorms)
	if err := x.world.AllGather(x.pairsAll, x.pairs); err != nil {
		return err
	}
	for r := range x.world.Size() {
		copy(x.values[r*k:(r+1)*k], x.pairsAll[2*r*k:])
		copy(x.gradNorms[r*k:(r+1)*k], x.pairsAll[(2*r+1)*k:])
	}
	return nil
}

// query answers a query command on every rank: the norms of the replicas
// and how far each went along the centre's momentum, or the consensus
// coefficients and the gradients' norms, of every device of the job.
func (x *executor) query(kind cmdKind) (values, second []float64, err error) {
	if kind == cmdNorms {
		return x.norms()
	}
	return x.consensus()
}

// norms answers QueryNorms: ‖w_i‖₂ of every replica of the job, and
// ⟨w_i − w̄, w̄ − w̄_prev⟩ = ⟨w_i, m⟩ − ⟨w̄, m⟩ with m = w̄ − w̄_prev (in
// x.scratch, free between collectives), gathered as a pair per device.
func (x *executor) norms() (norms, along []float64, err error) {
	var cm float64
	if x.center != nil {
		copy(x.scratch, x.center)
		kernel.Axpy(-1, x.prev, x.scratch)
		cm = kernel.Dot(x.center, x.scratch)
	}
	for i, d := range x.devs {
		x.part[i], x.partNorms[i] = 0, 0
		switch {
		case x.members.gone(d.id):
			x.part[i], x.partNorms[i] = math.NaN(), math.NaN()
		case d.p != nil:
			x.part[i] = kernel.Nrm2(d.p)
			if x.center != nil {
				x.partNorms[i] = kernel.Dot(d.p, x.scratch) - cm
			}
		}
	}
	if err := x.gatherPairs(); err != nil {
		return nil, nil, fmt.Errorf("engine: gathering the replicas' norms: %w", err)
	}
	return x.values, x.gradNorms, nil
}

// consensus answers QueryConsensus: c_i = ⟨g_i, ḡ⟩/‖g_i‖² (NaN where
// g_i = 0) and ‖g_i‖ for every device of the job. In one process ḡ is never
// stored; across ranks it is all-reduced first.
func (x *executor) consensus() ([]float64, []float64, error) {
	if x.cfg.TimingOnly {
		for i := range x.values {
			x.values[i], x.gradNorms[i] = 1, 1
		}
		return x.values, x.gradNorms, nil
	}
	mean, grads := x.localGrads(nil)
	if x.world.Size() == 1 {
		kernel.Consensus(x.dots, x.part, grads)
		x.spreadLive(x.dots)
		x.spreadLive(x.part)
	} else {
		if err := comm.WeightedAllReduce(x.world, x.scratch, mean, grads); err != nil {
			return nil, nil, fmt.Errorf("engine: the mean gradient of the consensus: %w", err)
		}
		kernel.DotsNorms(x.dots, x.part, grads, x.scratch)
	}
	for i, sq := range x.part {
		x.partNorms[i] = math.Sqrt(sq)
		if sq > 0 {
			x.part[i] = x.dots[i] / sq
		} else {
			x.part[i] = math.NaN()
		}
	}
	if err := x.gatherPairs(); err != nil {
		return nil, nil, fmt.Errorf("engine: gathering the consensus coefficients: %w", err)
	}
	return x.values, x.gradNorms, nil
}

// commit applies device d's update to θ in this process (the device and θ
// on the same rank): Commit's rule in one pass. It returns GEM's median π
// over the sampled parameters (NaN for the other rules, or when none of
// them changes).
func (x *executor) commit(d *device, a strategy.Action) float64 {
	lr := float32(a.LR)
	switch a.Rule {
	case strategy.Downpour:
		kernel.Axpy(-lr, d.g, x.center)
	case strategy.Staleness:
		kernel.Axpy(-lr/float32(a.Tau+1), d.g, x.center)
	case strategy.GEM:
		if d.m == nil {
			d.m = make([]float32, len(d.p))
		}
		pi := x.pi.median(x.cfg.Seed, x.center, d, a)
		kernel.GEMCommit(x.center, d.p, d.m, d.g, lr, float32(a.Mu), float32(a.Kappa), float32(a.Eps), float32(a.Clip))
		return pi
	}
	return math.NaN()
}

// update is the worker's half of a commit to a θ held by another rank: it
// turns d's gradient, in place, into the update the server adds to θ.
// theta is the centre as last received (GEM's π is measured against it).
func (x *executor) update(d *device, a strategy.Action, theta []float32) float64 {
	lr := float32(a.LR)
	switch a.Rule {
	case strategy.Downpour:
		kernel.Scal(-lr, d.g)
	case strategy.Staleness:
		kernel.Scal(-lr/float32(a.Tau+1), d.g)
	case strategy.GEM:
		if d.m == nil {
			d.m = make([]float32, len(d.p))
		}
		pi := x.pi.median(x.cfg.Seed, theta, d, a)
		kernel.GEMDelta(d.g, theta, d.p, d.m, lr, float32(a.Mu), float32(a.Kappa), float32(a.Eps), float32(a.Clip))
		return pi
	}
	return math.NaN()
}

// piSample measures GEM's scaling factors on a fixed sample of parameters.
type piSample struct {
	sample []int
	buf    []float64
}

// median returns the median of GEM's π over the sample, as the commit about
// to happen will compute them, counting only parameters the update changes
// (Δ ≠ 0): with sparse inputs most first-layer weights get no gradient from
// a batch and their π means nothing. NaN when none in the sample changes.
func (s *piSample) median(seed uint64, theta []float32, d *device, a strategy.Action) float64 {
	if s.sample == nil {
		rng := rand.New(rand.NewPCG(seed, 0x91))
		k := min(512, len(theta))
		s.sample = rng.Perm(len(theta))[:k]
		s.buf = make([]float64, k)
	}
	lr, mu := float32(a.LR), float32(a.Mu)
	pis := s.buf[:0]
	for _, j := range s.sample {
		delta := -lr * d.g[j]
		if delta == 0 {
			continue
		}
		m := mu*d.m[j] + delta
		pis = append(pis, float64(kernel.GEMFactor(theta[j], d.p[j], m, delta, float32(a.Kappa), float32(a.Eps), float32(a.Clip))))
	}
	if len(pis) == 0 {
		return math.NaN()
	}
	slices.Sort(pis)
	return pis[len(pis)/2]
}
