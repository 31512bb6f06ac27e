package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// Observer follows a run (a progress bar). Step is called after every batch
// and must be cheap.
type Observer interface {
	Step(epoch float64, samples int64, trainSeconds float64, loss float64)
	Eval(r runlog.Eval)
}

// Result summarises a run.
type Result struct {
	Evals        []runlog.Eval
	Merges       []runlog.Merge
	Async        []runlog.Async
	Taus         []int64 // commits by τ (index), the centre's updates between a device's pull and its commit
	Notes        int
	TrainSeconds float64
	Samples      int64
	Steps        int64     // AllReduce actions executed (synchronous steps)
	Model        []float32 // the evaluated model at the end (nil when timing only)
	Strategy     strategy.Info
	Diverged     bool // the run stopped because its loss stopped being finite
	Diverging    bool // the training loss grew by orders of magnitude (lossWatch)
	Stalled      bool // the training loss did not fall over the first evaluations (lossWatch)
	// Untrained: the run ended, after training, before any update reached
	// the model it evaluates (a centre merged only every mega-batch): its
	// evaluations are the initial model's.
	Untrained bool
	// StoppedEarly: the run stopped after Config.Patience evaluations
	// without a better one.
	StoppedEarly bool
	// Layered is where rank 0's time went in Layered SGD's all-reduces
	// across ranks (nil when there were none).
	Layered *LayeredTiming
	// Faults are the injected faults as they struck and as devices left.
	Faults []runlog.Fault
	// StopCheckpoint is the checkpoint a run stopped by its context wrote
	// as it stood ("" when none: no Checkpointing.Dir, or not stopped).
	StopCheckpoint string
}

// Run trains workload w with cfg's strategy, evaluates it, and writes
// eval, merge, note and async records to log (nil: none). A cancelled ctx
// ends the run at the next event with the results so far and ctx's error.
// It is Prepare, then Prepared.Run.
//
// With cfg.World a group of several ranks, every rank calls Run with the
// same settings and workload: rank 0 drives the run, evaluates and writes
// the log, and gets the Result; the other ranks serve their devices until
// rank 0 ends the run, and get a nil Result.
func Run(ctx context.Context, cfg Config, w Workload, log *runlog.Log, obs Observer) (*Result, error) {
	p, err := Prepare(cfg, w)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, log, obs)
}

// Prepared is a run set up — its devices, strategy and clock, and a
// resumed run's state restored from its checkpoint — and not yet started:
// every error its settings, its workload and its checkpoint hold has been
// met, and nothing written. A caller that writes outputs of its own (a run
// log) opens them between Prepare and Run, so that a run that cannot start
// leaves none behind.
type Prepared struct {
	cfg Config
	w   Workload
	r   *run // nil once run or closed; nil too for Layered SGD's in-process ranks, set up as they start
	ran bool
}

// Prepare sets a run of cfg on w up (see Prepared).
func Prepare(cfg Config, w Workload) (*Prepared, error) {
	if info, err := strategy.Lookup(cfg.Strategy); err == nil && info.Output == "slide" {
		if s := sampledLayer(w); s == nil || *s != s.SLIDE() {
			return nil, setting.Errorf("engine", "engine: {Config.Strategy} %s trains a sampled output layer as SLIDE's code does: give the workload one in Sampling.SLIDE's mode (workload.XML.SetSampling)", cfg.Strategy)
		}
	}
	if sampledLayer(w) != nil && cfg.Clock == Virtual {
		// The virtual clock prices what a sampled layer's batch computed.
		switch {
		case cfg.TimingOnly:
			return nil, setting.Errorf("engine", "engine: {Config.TimingOnly}: a sampled output layer's batch costs what it computes, and a timing-only run computes nothing")
		case !cfg.Cost.Sampled():
			return nil, setting.Errorf("engine", "engine: {Config.Cost} (%s) has no terms for a sampled output layer: calibrate one with hetsgd calibrate", cfg.Cost.Source)
		}
	}
	if info, err := strategy.Lookup(cfg.Strategy); err == nil && layeredInProcess(cfg, info.Groups) {
		if cfg.Checkpoint.Dir != "" || cfg.Resume != nil {
			return nil, setting.Errorf("engine", "engine: {Config.Checkpoint} and {Config.Resume}: %s with nodes under the real clock runs a rank per device, and checkpoints save one rank's run (use {Config.Clock} virtual)", cfg.Strategy)
		}
		return &Prepared{cfg: cfg, w: w}, nil
	}
	r, err := newRun(cfg, w, nil, nil)
	if err != nil {
		return nil, err
	}
	return &Prepared{cfg: cfg, w: w, r: r}, nil
}

// SetCheckpointSettings sets the caller's description of the run saved in
// its checkpoints (Checkpointing.Settings), for a caller that knows it only
// once its outputs are open (where its log is).
func (p *Prepared) SetCheckpointSettings(b []byte) {
	if p.r != nil {
		p.r.cfg.Checkpoint.Settings = b
	}
}

// Close releases a prepared run that will not be run: its devices'
// goroutines stop. It does nothing after Run.
func (p *Prepared) Close() {
	if p == nil || p.r == nil {
		return
	}
	if p.r.clk != nil {
		p.r.clk.drain()
	}
	p.r.job.close()
	p.r = nil
}

// Run runs the prepared run (once), writing its records to log and telling
// obs of its progress: as the package-level Run.
func (p *Prepared) Run(ctx context.Context, log *runlog.Log, obs Observer) (*Result, error) {
	if p.ran {
		return nil, errors.New("engine: a prepared run runs once")
	}
	p.ran = true
	if p.r == nil {
		return runRanks(ctx, p.cfg, p.w, log, obs)
	}
	r, cfg := p.r, p.r.cfg
	p.r = nil
	r.log, r.obs = log, obs
	// A signal reaches every rank (mpirun passes it on; in-process ranks
	// share ctx): each hurries its own devices at once, so that none holds
	// the stop up with a slow-down or simulated decoding — on a rank other
	// than 0 too, whose batches rank 0 waits for.
	defer context.AfterFunc(ctx, r.job.hurry)()
	if r.world.Rank() != 0 {
		return nil, r.job.serve() // a rank other than 0 only serves its executor
	}
	err := r.drive(ctx)
	if err == nil {
		err = r.warnUnstruck()
	}
	if serr := r.job.stop(); serr != nil && err == nil {
		err = serr
	}
	r.job.close()
	r.res.TrainSeconds = r.clk.now()
	r.res.Samples = r.done
	r.res.Diverged = errors.Is(err, ErrDiverged)
	r.res.Untrained = r.done > 0 && !r.moved && r.info.Evaluates == strategy.Center && !cfg.TimingOnly
	if !cfg.TimingOnly {
		r.res.Model = r.evaluated()
	}
	if lay, ok := r.job.layered(); ok {
		r.res.Layered = &lay
	}
	return r.res, err
}

// run is the driver: it feeds the strategy its events, turns its actions
// into work for the executors, keeps the books (samples, budget, the devices
// under way), evaluates and writes the log. It runs on rank 0 only and is
// single-threaded; the clock says when things happen.
type run struct {
	ctx        context.Context // the run's, for evaluations
	cfg        Config
	info       strategy.Info
	strat      strategy.Strategy
	w          Workload
	shape      Shape
	bytes      int // a replica's size on the wire
	world      comm.Comm
	job        job // the devices of every rank, commanded: never an executor's fields
	clk        clock
	slots      []slot // every device of the job
	log        *runlog.Log
	obs        Observer
	res        *Result
	budget     int64 // samples (math.MaxInt64: none)
	dispatched int64
	done       int64
	evalStep   int64
	nextEval   int64
	lastEval   int64
	changed    bool // the evaluated model changed since the last evaluation
	moved      bool // a collective or a commit has changed the centre model since the run began
	lossSum    float64
	lossRows   int64
	acts, next []strategy.Action
	works      []work
	weights    []float64 // a layered all-reduce's weights, kept across the strategy's next Step
	cmd        command   // the command the job carries out (a field: passed to an interface, a local would escape)
	async      asyncStats
	lossWatch  lossWatch
	members    *membership // who is in the run: the executor's record, shared
	faultErr   error       // a log write error while noting a fault
	// The evaluations, as functions made once: a method value made per
	// call would allocate.
	evalDue, evalFinal func() error
	// Checkpoints: the next one is due after nextCheckpoint samples;
	// pending is the event the strategy has yet to see when one is taken
	// (if hasPending); the functions save if due (saveDue) and at the end.
	nextCheckpoint, checkpointStep int64
	pending                        strategy.Event
	hasPending                     bool
	saveDue, saveFinal             func() error
	// stopping: a signal stopped the run, which is being saved (stopped):
	// no batch is started and nothing evaluated.
	stopping bool
	resumed  bool // restored from a checkpoint
	resized  bool // restored on another number of devices: the strategy starts anew (restoreResized)
}

// slot is the driver's view of a device: whether it has a batch, and what
// its last batch reported.
type slot struct {
	busy bool
	rows int
	loss float64
	work work // the batch under way (busy)
	// dropped: the strategy's dispatch drop was refused by the budget; a
	// longer run resumed from the end asks for it again.
	dropped bool
	drop    strategy.Action
}

// clock is when things happen: under the real clock, as the devices do
// them; under the virtual clock, when the cost and network models say.
type clock interface {
	now() float64
	// dispatch hands a batch to its device.
	dispatch(w work) error
	// after makes ev happen once action a is done (nil: at once).
	after(a *strategy.Action, ev strategy.Event)
	// next returns the next event; false when nothing is left to happen.
	next(ctx context.Context) (strategy.Event, bool, error)
	// started counts batches the executors started themselves: those
	// prepared during a layered all-reduce (real clock only).
	started(n int)
	// computing reports whether device dev is computing a batch the
	// driver dispatched, which may be changing its replica.
	computing(dev int) bool
	// committed prices a commit's messages (Cost.Transfers).
	committed(a *strategy.Action)
	// pause runs f with the clock stopped (evaluation).
	pause(f func() error) error
	// drain waits for the batches still under way and stops the devices.
	drain()
}

// asyncStats accumulates parameter-server statistics between records.
type asyncStats struct {
	commits      int64
	sinceTau     int64
	sinceCommits int64
	sinceMax     int
	pis          []float64 // per-commit median π since the last record
}

func newRun(cfg Config, w Workload, log *runlog.Log, obs Observer) (*run, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	world := cfg.World
	if world == nil {
		world = comm.Self()
	}
	if cfg.Devices%world.Size() != 0 {
		return nil, setting.Errorf("engine", "engine: {Config.Devices} %d: need a multiple of the %d ranks (the same number of devices on each)", cfg.Devices, world.Size())
	}
	if world.Size() > 1 && (cfg.Clock != Real || cfg.TimingOnly) {
		return nil, setting.Errorf("engine", "engine: {Config.Clock} virtual simulates every device in one process: run it without mpirun")
	}
	if k := cfg.Devices / world.Size(); world.Size() > 1 && cfg.Net.GroupSize%k != 0 {
		return nil, setting.Errorf("engine", "engine: {Config.Net.GroupSize} %d: nodes of that many devices would split ranks of %d: a node holds whole ranks", cfg.Net.GroupSize, k)
	}
	scfg := cfg.strategyConfig(w.Size())
	strat, info, err := strategy.New(cfg.Strategy, scfg)
	if err != nil {
		return nil, err
	}
	if _, err := optim.New(cfg.Optimizer, 0); err != nil {
		return nil, err
	}
	if cfg.LineSearch {
		if _, ok := w.(LineSearcher); !ok {
			return nil, setting.Errorf("engine", "engine: {Config.LineSearch}: workload %s has no closed-form objective", w.Name())
		}
	}
	if world.Size() > 1 {
		if err := agreeSettings(world, cfg, w); err != nil {
			return nil, err
		}
	}
	if err := checkRound(cfg, w.Size()); err != nil {
		return nil, err
	}
	if err := checkMemory(cfg, info, w, cfg.Devices/world.Size(), info.MaxBatchOf(scfg)); err != nil {
		return nil, err
	}
	x, err := newExecutor(cfg, w, world, info.MaxBatchOf(scfg))
	if err != nil {
		return nil, err
	}
	j := execJob{x: x}
	if world.Size() > 1 {
		j.cl = newCluster(world, cfg.Devices)
	}
	return assemble(cfg, w, log, obs, strat, info, world, j, x.members)
}

// assemble makes the run of strat on job j, whose devices' membership
// record is members, and restores it from cfg.Resume when set.
func assemble(cfg Config, w Workload, log *runlog.Log, obs Observer, strat strategy.Strategy, info strategy.Info, world comm.Comm, j job, members *membership) (*run, error) {
	r := &run{cfg: cfg, info: info, strat: strat, w: w, shape: w.Shape(), bytes: 4 * w.NumParams(), world: world,
		slots: make([]slot, cfg.Devices), members: members, log: log, obs: obs,
		res: &Result{Strategy: info}, budget: math.MaxInt64, job: j}
	if cfg.Epochs > 0 {
		r.budget = int64(math.Ceil(cfg.Epochs * float64(w.Size())))
	}
	r.evalStep = max(1, int64(min(math.Round(cfg.EvalEvery*float64(w.Size())), 1<<62))) // the range bounds it; min keeps the conversion exact
	r.nextEval = r.evalStep
	r.evalDue = func() error { return r.evaluate(false) }
	r.evalFinal = func() error { return r.evaluate(true) }
	// Without checkpoints, or with the last one only, none is ever due.
	r.nextCheckpoint, r.checkpointStep = math.MaxInt64, math.MaxInt64
	if e := cfg.Checkpoint.Every; e > 0 && cfg.Checkpoint.Dir != "" {
		r.checkpointStep = max(1, int64(min(math.Round(e*float64(w.Size())), 1<<62)))
		r.nextCheckpoint = r.checkpointStep
	}
	r.saveDue = func() error {
		if r.hasPending {
			return r.checkpointDue(&r.pending)
		}
		return r.checkpointDue(nil)
	}
	r.saveFinal = func() error { return r.save(nil) }
	if cfg.Clock == Virtual {
		r.clk = newVirtualClock(r)
	} else if world.Rank() == 0 {
		r.clk = newRealClock(r)
	}
	if cfg.Resume != nil {
		if err := r.restore(cfg.Resume); err != nil {
			r.clk.drain()
			return nil, err
		}
	}
	return r, nil
}

// drive is the event loop: the one place where each action gets its
// meaning.
func (r *run) drive(ctx context.Context) error {
	r.ctx = ctx
	defer r.clk.drain()
	if r.resumed && !r.resized {
		// (Its start's warnings are in its log already.)
		if err := r.restart(); err != nil {
			return err
		}
	} else {
		if err := errors.Join(r.warnRound(), r.warnRate()); err != nil {
			return err
		}
		r.clk.after(nil, strategy.Event{Kind: strategy.Start})
	}
	if err := r.loop(ctx); err != nil {
		return r.stopped(err)
	}
	if err := r.clk.pause(r.evalFinal); err != nil {
		return r.stopped(err)
	}
	if r.cfg.Checkpoint.Dir == "" {
		return nil
	}
	return r.clk.pause(r.saveFinal)
}

// checkRound refuses a run of several devices whose batches together — a
// round, what one synchronous step averages — hold more than the points
// training has: every round would see the whole set, and an epoch would be
// less than one step, so that a run of the usual epochs takes a handful of
// steps at a rate scaled to a batch the set cannot fill (64 devices of 128
// on Bibtex's 4,880 points: 12 steps in 20 epochs, P@1 0.41 against 0.62
// on 8). More devices made it so, and fewer devices or smaller batches
// mend it. On one device the batch is the whole set, full-batch descent,
// which a small set may want: it is warned of (warnRound). Timing-only
// runs compute nothing and may ask for any batch.
func checkRound(cfg Config, points int) error {
	if cfg.Devices == 1 || !bigRound(cfg, points) {
		return nil
	}
	round := int64(cfg.Devices) * int64(cfg.Batch)
	// The fix is part of the format: a setting is named in the format only.
	fix := "fewer {Config.Devices}"
	if b := points / cfg.Devices; b >= 1 {
		fix = fmt.Sprintf("a smaller {Config.Batch} (at most %d on %d devices)", b, cfg.Devices)
		if d := points / cfg.Batch; d >= 1 {
			fix += fmt.Sprintf(" or fewer {Config.Devices} (at most %d at batch %d)", d, cfg.Batch)
		}
	}
	return setting.Errorf("engine", "engine: {Config.Devices} %d × {Config.Batch} %d is %d samples a round of batches, more than the %d training points: every round would hold the whole set%s. Give "+fix,
		cfg.Devices, cfg.Batch, round, points, roundSteps(cfg, points))
}

// bigRound reports whether cfg's devices' batches together hold more than
// points.
func bigRound(cfg Config, points int) bool {
	return !cfg.TimingOnly && points > 0 && int64(cfg.Devices)*int64(cfg.Batch) > int64(points)
}

// roundSteps says how many rounds (one device's: steps) cfg's epochs of
// points make, for the messages of a round larger than the set.
func roundSteps(cfg Config, points int) string {
	if cfg.Epochs == 0 {
		return ""
	}
	what := "rounds"
	if cfg.Devices == 1 {
		what = "steps"
	}
	return fmt.Sprintf(", and %g epochs would be %d %s", cfg.Epochs, int64(math.Ceil(cfg.Epochs*float64(points)/float64(cfg.Devices*cfg.Batch))), what)
}

// warnRound warns, at a run's start, of one device's batch larger than the
// training set (checkRound refuses several devices').
func (r *run) warnRound() error {
	if !bigRound(r.cfg, r.w.Size()) {
		return nil
	}
	return r.warn("batch", fmt.Sprintf("the batch of %d is larger than the %d training points: every step holds the whole set%s; a smaller batch takes more steps an epoch",
		r.cfg.Batch, r.w.Size(), roundSteps(r.cfg, r.w.Size())))
}

// warnRate warns, once at a run's start, when the strategy's default rate
// scaled to the run (more devices, a larger batch) is above the rates its
// defaults were validated at (strategy.Settings.MaxLR).
func (r *run) warnRate() error {
	d := r.info.SettingsFor(r.cfg.Paper)
	if r.cfg.scaled == "" || d.MaxLR == 0 || !(r.cfg.LR > d.MaxLR*(1+1e-9)) {
		return nil
	}
	return r.warn("rate", fmt.Sprintf("the learning rate %.4g, %s's default %s scaled to this run (%s), is above %g, the largest rate at which %s was validated (BENCHMARKS.md §8: 4 devices, batches of 64 to 256): results may be poor; give a rate of your own (at most %g), or use fewer devices or smaller batches",
		r.cfg.LR, r.cfg.Strategy, r.cfg.Optimizer.Name, r.cfg.scaled, d.MaxLR, r.cfg.Strategy, d.MaxLR))
}

// warn tells the observer and the log of a warning of kind (a runlog
// Warning's) at the run's present.
func (r *run) warn(kind, text string) error {
	w := runlog.Warning{Event: "warning", Time: r.clk.now(), Samples: r.done, Kind: kind, Text: text}
	if wr, ok := r.obs.(Warner); ok {
		wr.Warn(w)
	}
	return r.write(w)
}

// loop handles events until none is left to happen.
func (r *run) loop(ctx context.Context) error {
	for {
		ev, ok, err := r.clk.next(ctx)
		if err == nil {
			err = r.faultErr
		}
		if err != nil || !ok {
			return err
		}
		if err := r.handle(ev); err != nil {
			return err
		}
	}
}

// handle gives event ev its meaning: the driver's books, the evaluations
// and checkpoints due, then the strategy's answer.
func (r *run) handle(ev strategy.Event) error {
	switch ev.Kind {
	case strategy.BatchDone:
		r.finish(ev.Device)
		if err := r.check(ev.Device); err != nil {
			return err
		}
		if err := r.watch(ev.Device); err != nil {
			return err
		}
	case strategy.CollectiveDone:
		// Until the strategy has seen it, the event is pending: a
		// checkpoint taken now — one due, or a stopped run's, should a
		// signal cut the evaluation short — gives it first on resume.
		r.pending, r.hasPending = ev, true
		if err := r.clk.pause(r.evalDue); err != nil {
			return err
		}
		if r.done >= r.nextCheckpoint {
			// Checked here: the real clock's pause reads the time twice.
			if err := r.clk.pause(r.saveDue); err != nil {
				return err
			}
		}
	}
	return r.step(ev)
}

// step gives ev to the strategy and carries out its answer.
func (r *run) step(ev strategy.Event) error {
	r.hasPending = false
	r.acts = r.strat.Step(ev, r.acts[:0])
	for i := range r.acts {
		if err := r.do(&r.acts[i]); err != nil {
			return err
		}
	}
	if r.info.Async && ev.Kind == strategy.BatchDone {
		// Between commits the centre is only touched by the driver, so it
		// can be scored while devices compute; their work during the
		// evaluation is at most one batch each.
		if err := r.clk.pause(r.evalDue); err != nil {
			return err
		}
		if r.done >= r.nextCheckpoint {
			if err := r.clk.pause(r.saveDue); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopped ends a run that err ended. A run stopped by its context (a
// signal) that keeps checkpoints is saved first, so that a resume goes on
// from where it stood rather than from its last checkpoint, or from nothing:
// under the virtual clock at once, and exactly (a batch is computed when
// it is dispatched, and an evaluation cut short is held pending, to be
// made on resume); under the real clock once no device is computing a
// local step, whose replica is changing — the devices are hurried (their
// slow-downs and simulated decoding skipped), and while their batches
// come in no batch is started and nothing evaluated: the dispatches
// refused are asked for again on resume, as a finished run's are when it
// is trained longer. It takes what a checkpoint takes to write, on top of
// the batches under way. Any other error is returned as it is.
func (r *run) stopped(err error) error {
	if r.ctx.Err() == nil || !errors.Is(err, context.Canceled) || r.cfg.Checkpoint.Dir == "" || r.cfg.TimingOnly {
		return err
	}
	r.stopping = true
	if herr := r.job.hurryAll(); herr != nil {
		return errors.Join(err, herr)
	}
	for !r.saveable() {
		if r.hasPending {
			// (Not met: an evaluation is due only when every device is idle,
			// or, for the asynchronous strategies, after the strategy's step.)
			if serr := r.step(r.pending); serr != nil {
				return errors.Join(err, serr)
			}
			continue
		}
		ev, ok, nerr := r.clk.next(context.WithoutCancel(r.ctx))
		if nerr == nil {
			nerr = r.faultErr
		}
		if nerr != nil {
			return errors.Join(err, nerr)
		}
		if !ok {
			break
		}
		if herr := r.handle(ev); herr != nil {
			return errors.Join(err, herr)
		}
	}
	var pending *strategy.Event
	if r.hasPending {
		pending = &r.pending
	}
	if serr := r.clk.pause(func() error { return r.save(pending) }); serr != nil {
		// Not a plain stop: the run the caller asked to keep is not saved.
		return fmt.Errorf("engine: the run stopped (%v) but could not be saved: %w", context.Cause(r.ctx), serr)
	}
	r.res.StopCheckpoint = checkpoint.Dir(r.cfg.Checkpoint.Dir).Path(r.done)
	return err
}

// do carries out one action of the strategy.
func (r *run) do(a *strategy.Action) error {
	switch a.Kind {
	case strategy.Dispatch:
		if w, ok := r.begin(a); ok {
			return r.clk.dispatch(w)
		}
	case strategy.Query:
		if !r.allIdle() {
			panic(fmt.Sprintf("engine: %s queried %s while devices are busy", r.cfg.Strategy, a.Op))
		}
		r.cmd = opCommand(cmdQuery, a)
		v, second, err := r.job.query(&r.cmd)
		if err != nil {
			return err
		}
		r.clk.after(a, strategy.Event{Kind: strategy.Answer, Values: v, Second: second, Dim: r.w.NumParams()})
	case strategy.Commit:
		return r.commit(a)
	case strategy.AllReduce, strategy.Collective:
		if !r.allIdle() {
			panic(fmt.Sprintf("engine: %s issued %s while devices are busy", r.cfg.Strategy, a.Kind))
		}
		r.changed, r.moved = true, true
		if a.Kind == strategy.AllReduce {
			r.res.Steps++
		}
		if a.Note != "" {
			r.res.Notes++
			if err := r.write(runlog.Note{Event: "note", Time: r.clk.now(), Strategy: r.cfg.Strategy, Text: a.Note}); err != nil {
				return err
			}
		}
		if r.overlaps(a) {
			return r.layered(a)
		}
		if err := r.collective(a, nil); err != nil {
			return err
		}
		var norm float64 // of the evaluated model: after a merge, the centre's
		if a.Kind != strategy.AllReduce {
			var err error
			if norm, err = r.checkModel(a.Op); err != nil {
				return err
			}
		}
		if a.Record != nil && !r.cfg.TimingOnly {
			// Timing-only runs compute no merge and record none.
			ev := runlog.Merge{Event: "merge", Time: r.clk.now(), CenterNorm: norm, MergeRecord: a.Record}
			r.res.Merges = append(r.res.Merges, ev)
			if err := r.write(ev); err != nil {
				return err
			}
		}
		r.clk.after(a, strategy.Event{Kind: strategy.CollectiveDone})
	default:
		panic("engine: unknown action " + a.Kind.String())
	}
	return nil
}

// collective runs a collective action on every rank, with next the batches
// that start once it is done (prepared while it runs).
func (r *run) collective(a *strategy.Action, next []work) error {
	r.cmd = opCommand(cmdCollective, a)
	if a.Kind == strategy.AllReduce {
		r.cmd.kind, r.cmd.layered = cmdAllReduce, a.Layered
	}
	return r.job.collective(&r.cmd, next)
}

// overlaps reports whether a is a layered all-reduce whose following
// dispatches are handed out with it, so that workers prepare their next
// batch while the nodes' communicators all-reduce (Layered SGD across
// ranks). Not when an evaluation is due after it: evaluation wants every
// device idle.
func (r *run) overlaps(a *strategy.Action) bool {
	return a.Kind == strategy.AllReduce && a.Layered && r.job.distributed() && !r.cfg.NoOverlap && r.done < r.nextEval
}

// layered runs a Layered all-reduce across ranks with the strategy's answer
// to its completion — which must be dispatches only — handed out with it.
func (r *run) layered(a *strategy.Action) error {
	// The strategy's weights are valid until its next Step, which comes
	// first here: keep a copy. Nothing may follow the all-reduce among the
	// actions of its Step, since the strategy answers its completion now.
	if a != &r.acts[len(r.acts)-1] {
		panic(fmt.Sprintf("engine: %s issued actions after a layered all-reduce", r.cfg.Strategy))
	}
	all := *a
	r.weights = append(r.weights[:0], a.Weights...)
	all.Weights = r.weights
	a = &all
	r.next = r.strat.Step(strategy.Event{Kind: strategy.CollectiveDone}, r.next[:0])
	r.works = r.works[:0]
	for i := range r.next {
		b := &r.next[i]
		if b.Kind != strategy.Dispatch {
			panic(fmt.Sprintf("engine: %s answered a layered all-reduce with %s: only dispatches can overlap it", r.cfg.Strategy, b.Kind))
		}
		if w, ok := r.begin(b); ok {
			r.works = append(r.works, w)
		}
	}
	if err := r.collective(a, r.works); err != nil {
		return err
	}
	r.clk.started(len(r.works))
	return nil
}

// evaluated returns the model whose accuracy the strategy reports.
func (r *run) evaluated() []float32 {
	p, _ := r.job.evaluated(r.info.Evaluates == strategy.Replica0)
	return p
}

// exhausted reports whether the budget forbids new work.
func (r *run) exhausted() bool {
	return r.dispatched >= r.budget || (r.cfg.TimeBudget > 0 && r.clk.now() >= r.cfg.TimeBudget) || r.res.StoppedEarly || r.stopping
}

// begin books a Dispatch and returns its work; false means the budget is
// spent and the action is dropped (the strategy then waits forever for that
// device, and the run ends when nothing else is under way).
func (r *run) begin(a *strategy.Action) (work, bool) {
	s := &r.slots[a.Device]
	if s.busy {
		panic(fmt.Sprintf("engine: %s dispatched to device %d while it is busy", r.cfg.Strategy, a.Device))
	}
	if r.members.gone(a.Device) {
		panic(fmt.Sprintf("engine: %s dispatched to device %d, which left the run", r.cfg.Strategy, a.Device))
	}
	if r.exhausted() {
		s.dropped, s.drop = true, *a
		return work{}, false
	}
	if a.Batch < 1 {
		panic(fmt.Sprintf("engine: %s dispatched a batch of %d", r.cfg.Strategy, a.Batch))
	}
	w := work{dev: a.Device, pos: r.dispatched, rows: a.Batch, lr: a.LR, mode: a.Mode}
	s.busy, s.rows, s.work, s.dropped = true, a.Batch, w, false
	r.dispatched += int64(a.Batch)
	return w, true
}

// finish books a device's finished batch.
func (r *run) finish(d int) {
	s := &r.slots[d]
	s.busy = false
	n := int64(s.rows)
	r.done += n
	r.lossSum += s.loss * float64(n)
	r.lossRows += n
	if r.obs != nil {
		r.obs.Step(float64(r.done)/float64(r.w.Size()), r.done, r.clk.now(), s.loss)
	}
}

func (r *run) allIdle() bool {
	for i, s := range r.slots {
		if s.busy && !r.members.gone(i) {
			return false
		}
	}
	return true
}

// commit applies a parameter-server update to the centre model, which rank 0
// holds: in place when the device is here too, else by asking its rank for
// the update.
func (r *run) commit(a *strategy.Action) error {
	if r.slots[a.Device].busy {
		panic(fmt.Sprintf("engine: %s committed for device %d while it is busy", r.cfg.Strategy, a.Device))
	}
	r.changed, r.moved = true, true
	st := &r.async
	st.commits++
	st.sinceCommits++
	st.sinceTau += int64(a.Tau)
	st.sinceMax = max(st.sinceMax, a.Tau)
	for len(r.res.Taus) <= a.Tau {
		r.res.Taus = append(r.res.Taus, 0)
	}
	r.res.Taus[a.Tau]++
	r.clk.committed(a)
	if r.cfg.TimingOnly {
		return nil
	}
	pi, err := r.job.commit(a)
	if err != nil {
		return err
	}
	if !math.IsNaN(pi) {
		st.pis = append(st.pis, pi)
	}
	return nil
}

// evaluate scores the strategy's model if an evaluation is due or final.
// The caller stops its clock around it. Nothing of the run changes until
// the model is scored: an evaluation a signal cuts short is made again by
// the resumed run (stopped).
func (r *run) evaluate(final bool) error {
	if r.cfg.TimingOnly || r.stopping {
		return nil
	}
	// A final evaluation only when the model moved since the last one: a run
	// cut off in the middle of a mega-batch still ends on its last merge.
	if !(r.done >= r.nextEval || (final && r.changed && r.done > r.lastEval) || (final && len(r.res.Evals) == 0)) {
		return nil
	}
	if _, err := r.checkModel("evaluation"); err != nil {
		return err
	}
	var scores metric.Scores
	if ce, ok := r.w.(ContextEvaluator); ok && r.ctx != nil {
		// A large test set takes long to score: a Ctrl-C stops it too.
		var err error
		if scores, err = ce.EvaluateContext(r.ctx, r.evaluated()); err != nil {
			return err
		}
	} else {
		scores = r.w.Evaluate(r.evaluated())
	}
	r.changed = false
	for r.nextEval <= r.done {
		r.nextEval += r.evalStep
	}
	r.lastEval = r.done
	trainLoss := 0.0
	if r.lossRows > 0 {
		trainLoss = r.lossSum / float64(r.lossRows)
	}
	r.lossSum, r.lossRows = 0, 0
	rec := runlog.NewEval(float64(r.done)/float64(r.w.Size()), r.done, r.clk.now(), scores, trainLoss)
	r.res.Evals = append(r.res.Evals, rec)
	if r.obs != nil {
		r.obs.Eval(rec)
	}
	if err := r.write(rec); err != nil {
		return err
	}
	if err := r.watchEval(rec); err != nil {
		return err
	}
	if err := r.bestEvaluated(); err != nil {
		return err
	}
	if st := &r.async; st.sinceCommits > 0 {
		ev := runlog.Async{Event: "async", Time: r.clk.now(), Commits: st.commits, MaxStaleness: st.sinceMax,
			MeanStaleness: float64(st.sinceTau) / float64(st.sinceCommits)}
		if len(st.pis) > 0 {
			slices.Sort(st.pis)
			m := st.pis[len(st.pis)/2]
			ev.MedianPi = &m
		}
		st.sinceCommits, st.sinceTau, st.sinceMax, st.pis = 0, 0, 0, st.pis[:0]
		r.res.Async = append(r.res.Async, ev)
		return r.write(ev)
	}
	return nil
}

func (r *run) write(rec any) error { return r.log.Write(rec) }

// ErrDiverged is wrapped by the error of a run whose loss stopped being
// finite; Run still returns the results up to that point.
var ErrDiverged = errors.New("engine: training diverged")

// checkModel reports a run whose evaluated model (the centre, or replica 0)
// holds a NaN or an infinity, and returns its norm. The loss, checked after
// every batch, sees only the weights the batch touches (the first layer is
// sparse), so the whole model is checked too: after every merge or centre
// step (an op's collective, which itself passes over the model several times) and
// before every evaluation — not after every synchronous step or commit,
// where a pass over the model would cost a tenth of a step at Amazon-670k's
// shape.
//
// at names the step, for the message ("merge", "evaluation"): a constant,
// for the check may run at every step and must not allocate.
func (r *run) checkModel(at string) (float64, error) {
	if r.cfg.TimingOnly {
		return 0, nil
	}
	n := kernel.Nrm2(r.evaluated())
	if math.IsNaN(n) || math.IsInf(n, 0) {
		article := "a"
		if strings.ContainsRune("aeiou", rune(at[0])) {
			article = "an"
		}
		return n, setting.Errorf("engine", "%w: %s's model holds a NaN or infinite weight at %s %s, after %d samples (lower {Config.LR}, or check the data for NaN or infinite values)",
			ErrDiverged, r.cfg.Strategy, article, at, r.done)
	}
	return n, nil
}

// check reports a diverged run.
func (r *run) check(d int) error {
	if loss := r.slots[d].loss; math.IsNaN(loss) || math.IsInf(loss, 0) {
		return setting.Errorf("engine", "%w: %s's device %d had a loss of %v after %d samples (lower {Config.LR})", ErrDiverged, r.cfg.Strategy, d, loss, r.done)
	}
	return nil
}
