package engine

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/workload"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// Checkpointing says where and how often a run saves its state.
type Checkpointing struct {
	Dir   string  // folder of the checkpoints, made if absent ("": none)
	Every float64 // epochs between checkpoints (0: only at the end)
	Keep  int     // newest checkpoints kept (0: DefaultKeep)
	// KeepBest keeps the model of the best evaluation so far in the
	// folder's file best.hck (checkpoint.Dir.Best), replaced whenever an
	// evaluation beats it: the model predict and export take with --which
	// best. Only for workloads scored by P@k (an MLP).
	KeepBest bool
	// Settings are the caller's own description of the run (hetsgd train's
	// flags), saved in every checkpoint as the section "settings".
	Settings []byte
}

// DefaultKeep is how many checkpoints a folder keeps: the newest, and the
// one before in case the newest is damaged after it was written.
const DefaultKeep = 2

// stateVersion numbers the layout of the engine's section; a checkpoint of
// another layout is refused (the file format has its own version).
const stateVersion = 1

// When a checkpoint is taken. A run is saved between two events, at a point
// where what it holds can be read: when a collective completes (every
// device is idle; the CollectiveDone, not yet given to the strategy, is
// saved with the clock's queue and given first on resume), and for
// parameter servers after a commit and its new dispatch. That is where
// evaluations happen too. Under the virtual clock a batch is computed when it
// is dispatched, so the devices' replicas and gradients are saved whatever
// they are doing; under the real clock the batches under way are not saved
// but started again on resume from the same place in the data (a device
// computing a local step is never under way there: the run waits for the
// next such point). At the end of a run a last checkpoint holds the final
// state, from which a longer run can go on: the batches the budget refused
// are asked for again.

// Saved state, with exported fields for gob.
type (
	engineState struct {
		Version  int
		Identity json.RawMessage // the settings that may not change
		Clock    Clock

		Dispatched, Done, NextEval, LastEval, NextCheckpoint int64
		CheckpointStep                                       int64
		Changed                                              bool
		Moved, HasMoved                                      bool // HasMoved: Moved is known (an earlier hetsgd kept none)
		LossSum                                              float64
		LossRows                                             int64
		Async                                                asyncState
		Silent, Gone                                         []bool
		Slots                                                []slotState
		Devices                                              []deviceState
		HasDPrev                                             bool
		HasPending                                           bool // the ops' reductions in flight (Host.Pending), complete
		LogOffset                                            int64
		LogCRC                                               uint32 // of the log's bytes before LogOffset
		LogHasCRC                                            bool
		// Model names the section of the model the strategy evaluates
		// (the centre, or the first replica in the run); ModelConfig is its
		// network's shape, when the workload is an MLP.
		Model       string
		ModelConfig *model.Config

		EvalStep  int64
		Evals     []runlog.Eval
		Merges    []runlog.Merge
		AsyncRecs []runlog.Async
		Taus      []int64
		LossWatch lossWatch
		Notes     int
		Steps     int64
		Faults    []runlog.Fault

		Now     float64
		Virtual *virtualState
		Real    *realState
		// BestOnly marks a best model's file (KeepBest): the model and the
		// evaluation that scored it, not a run to continue.
		BestOnly bool
	}
	asyncState struct {
		Commits, SinceTau, SinceCommits int64
		SinceMax                        int
		Pis                             []float64
	}
	slotState struct {
		Busy, Dropped bool
		Rows          int
		Loss          float64
		Work          workState       // busy: the batch under way
		Drop          strategy.Action // dropped: the dispatch the budget refused
	}
	workState struct {
		Dev  int
		Pos  int64
		Rows int
		LR   float64
		Mode strategy.Mode
	}
	deviceState struct {
		Speed, Stretch float64
		LR             float32
		Mode           strategy.Mode
		Loss           float64
		Rows           int
		Prepared       bool
		Noise, Random  []byte
		OptSteps       int
		HasGrad, HasM  bool
	}
	virtualState struct {
		T, ServerFree float64
		NetFree       float64 // when the ops' all-reduces in flight are through (0: none since the start)
		Seq           int64
		Pending       int
		Queue         []vstate  // the heap's array as it is
		Ready         []float64 // when each device's commit reaches it (nil: none pending)
	}
	vstate struct {
		T      float64
		Seq    int64
		Ev     strategy.Event
		Fault  int
		GiveUp bool
	}
	realState struct {
		Queue      []strategy.Event
		FaultsDone int
		GiveUps    []giveUpState
	}
	giveUpState struct {
		At    float64
		Fault Fault
	}
)

// identity is what a resumed run must share with the run it continues, by
// setting name (as checkpoints store it), in the order errors name them.
func (r *run) identity() []fixed {
	cfg := r.cfg
	opts, _ := r.info.Resolve(cfg.strategyConfig(r.w.Size()))
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	out := []fixed{
		{"strategy", cfg.Strategy, "{Config.Strategy}"}, {"devices", strconv.Itoa(cfg.Devices), "{Config.Devices}"},
		{"time", string(cfg.Clock), "{Config.Clock}"}, {"workload", workloadKind(r.w), "the workload"},
		{"parameters (--hidden and the data's shape)", strconv.Itoa(r.w.NumParams()), "the number of parameters ({model.Config.Hidden} and the data's shape)"},
		{"training points", strconv.Itoa(r.w.Size()), "the number of training points"},
		{"batch", strconv.Itoa(cfg.Batch), "{Config.Batch}"}, {"lr", f(cfg.LR), "{Config.LR}"},
		{"optimizer", js(cfg.Optimizer), "{Config.Optimizer}"}, {"strategy options", js(opts), "{Config.Options}"},
		{"seed", strconv.FormatUint(cfg.Seed, 10), "{Config.Seed}"}, {"speeds", js(cfg.Speeds), "{Config.Speeds}"},
		{"fault", js(cfg.Faults), "{Config.Faults}"}, {"noise", f(cfg.Noise), "{Config.Noise}"},
		{"cost", js(identityCost(cfg.Cost, sampledLayer(r.w) != nil)), "{Config.Cost}"}, {"network", js(cfg.Net), "{Config.Net}"},
		{"prep", f(cfg.Prep), "{Config.Prep}"}, {"line-search", strconv.FormatBool(cfg.LineSearch), "{Config.LineSearch}"},
	}
	if s := sampledLayer(r.w); s != nil {
		// Only a sampled run lists it, so that older checkpoints (all of a
		// dense layer) keep their identity.
		out = append(out, fixed{"output layer", js(*s), "the sampled output layer (its settings)"})
	}
	return out
}

// identityCost is the cost model as a run's identity holds it: a dense
// run's without the sampled layer's terms, which it never uses, so that a
// model calibrated since (or the default, which gained them) resumes the
// checkpoints of the same run.
func identityCost(c cost.Model, sampled bool) cost.Model {
	if !sampled {
		c.PerGather, c.PerHash, c.BuildShare, c.SampledSource = 0, 0, 0, ""
	}
	return c
}

// workloadKind names what a run trains for its identity: its kind
// (workload.Describer), else its name.
func workloadKind(w Workload) string {
	if d, ok := w.(workload.Describer); ok {
		return d.Kind()
	}
	return w.Name()
}

// sampledLayer returns the settings of w's sampled output layer, nil for a
// dense one.
func sampledLayer(w Workload) *workload.Sampling {
	if s, ok := w.(workload.SampledOutput); ok {
		return s.Sampling()
	}
	return nil
}

// fixed is a setting a resumed run keeps: its name and value as checkpoints
// store them (the names never change, or older checkpoints would be
// refused), and how errors name it (a setting.Errorf format).
type fixed struct {
	Name, Value string
	what        string
}

// Checkpointed is an Observer that is also told of each checkpoint written:
// after how many samples, at which time of the run's clock.
type Checkpointed interface {
	Checkpointed(samples int64, trainSeconds float64)
}

// checkpointDue saves the run if a checkpoint is due; pending is the event
// the strategy has yet to see (nil: none).
func (r *run) checkpointDue(pending *strategy.Event) error {
	if r.done < r.nextCheckpoint || !r.saveable() || r.stopping {
		return nil
	}
	for r.nextCheckpoint <= r.done {
		r.nextCheckpoint += r.checkpointStep
	}
	return r.save(pending)
}

// saveable reports whether the run can be saved now: no device still in
// the run may be computing a local step (its replica is changing). Under
// the virtual clock none ever is; a stalled device whose batch is in holds
// its replica still, though its report is lost.
func (r *run) saveable() bool {
	for i, s := range r.slots {
		if s.busy && s.work.mode == strategy.LocalStep && !r.members.gone(i) && r.clk.computing(i) {
			return false
		}
	}
	return true
}

// save writes a checkpoint of the run into the folder, then prunes it.
func (r *run) save(pending *strategy.Event) error {
	if err := r.log.Sync(); err != nil {
		return err
	}
	// Under mpirun the other ranks' devices' books come first: the engine's
	// section, written before the vectors, lists every device's.
	books, err := r.job.books(r.working())
	if err != nil {
		return err
	}
	st, err := r.state(pending, books)
	if err != nil {
		return err
	}
	var eng bytes.Buffer
	if err := gob.NewEncoder(&eng).Encode(st); err != nil {
		return fmt.Errorf("engine: encoding the checkpoint: %w", err)
	}
	snap, err := r.strat.MarshalBinary()
	if err != nil {
		return fmt.Errorf("engine: checkpoint: %w", err)
	}
	dir := checkpoint.Dir(r.cfg.Checkpoint.Dir)
	if err := dir.Make(); err != nil {
		return err
	}
	w, err := checkpoint.Create(dir.Path(r.done))
	if err != nil {
		return err
	}
	defer w.Abort()
	w.Bytes("settings", r.cfg.Checkpoint.Settings)
	w.Bytes("engine", eng.Bytes())
	w.Bytes("strategy", snap)
	if err := r.job.writeVectors(w, st.Devices); err != nil {
		return err
	}
	if err := w.Commit(); err != nil {
		return err
	}
	if c, ok := r.obs.(Checkpointed); ok {
		c.Checkpointed(r.done, r.clk.now())
	}
	keep := r.cfg.Checkpoint.Keep
	if keep == 0 {
		keep = DefaultKeep
	}
	return dir.Prune(keep)
}

// working marks the devices whose goroutines are computing a batch (real
// clock), by device.
func (r *run) working() []bool {
	out := make([]bool, r.cfg.Devices)
	for i, s := range r.slots {
		out[i] = r.cfg.Clock == Real && s.busy
	}
	return out
}

// state gathers the engine's books for a checkpoint; books are every
// device's (job.books).
func (r *run) state(pending *strategy.Event, books []deviceState) (*engineState, error) {
	id, err := json.Marshal(r.identity())
	if err != nil {
		return nil, err
	}
	st := &engineState{Version: stateVersion, Identity: id, Clock: r.cfg.Clock,
		Dispatched: r.dispatched, Done: r.done, NextEval: r.nextEval, LastEval: r.lastEval,
		NextCheckpoint: r.nextCheckpoint, CheckpointStep: r.checkpointStep,
		Changed: r.changed, Moved: r.moved, HasMoved: true, LossSum: r.lossSum, LossRows: r.lossRows,
		Async: asyncState{Commits: r.async.commits, SinceTau: r.async.sinceTau, SinceCommits: r.async.sinceCommits,
			SinceMax: r.async.sinceMax, Pis: r.async.pis},
		Silent: r.members.silent, Gone: r.members.goneList(), HasDPrev: r.job.hasCentreState(), HasPending: r.job.hasPending(), LogOffset: r.log.Offset(),
		LogCRC: r.log.Position().CRC, LogHasCRC: true,
		Merges: r.res.Merges, AsyncRecs: r.res.Async, Taus: r.res.Taus, LossWatch: r.lossWatch, Notes: r.res.Notes, Steps: r.res.Steps,
		Faults: r.res.Faults, Now: r.clk.now()}
	st.EvalStep, st.Evals = r.evalStep, r.res.Evals
	_, st.Model = r.job.evaluated(r.info.Evaluates == strategy.Replica0)
	if m, ok := r.w.(interface{ MLP() *model.MLP }); ok {
		c := m.MLP().Config()
		st.ModelConfig = &c
	}
	for _, s := range r.slots {
		w := s.work
		st.Slots = append(st.Slots, slotState{Busy: s.busy, Dropped: s.dropped, Rows: s.rows, Loss: s.loss, Drop: s.drop,
			Work: workState{Dev: w.dev, Pos: w.pos, Rows: w.rows, LR: w.lr, Mode: w.mode}})
	}
	// Under the real clock a device at work is left alone: its batch is
	// started again on resume (job.books).
	st.Devices = books
	switch c := r.clk.(type) {
	case *virtualClock:
		vs := &virtualState{T: c.t, ServerFree: c.serverFree, NetFree: c.netFree, Seq: c.seq, Pending: c.pending, Ready: c.ready}
		for _, e := range c.q {
			vs.Queue = append(vs.Queue, vstate{T: e.t, Seq: e.seq, Ev: e.ev, Fault: e.fault, GiveUp: e.giveUp})
		}
		if pending != nil {
			// The event being handled goes back where it was, to be popped
			// first (its time and order are the earliest).
			e := c.last
			vs.Queue = append(vs.Queue, vstate{T: e.t, Seq: e.seq, Ev: e.ev})
			vs.Pending++
		}
		st.Virtual = vs
	case *realClock:
		rs := &realState{FaultsDone: len(sortedFaults(r.cfg.Faults)) - len(c.faults)}
		if pending != nil {
			rs.Queue = append(rs.Queue, *pending) // given first on resume
		}
		rs.Queue = append(rs.Queue, c.queue[c.head:]...)
		for _, g := range c.giveUps {
			rs.GiveUps = append(rs.GiveUps, giveUpState{At: g.at, Fault: g.fault})
		}
		st.Real = rs
	}
	return st, nil
}

// restore puts the run in the state of checkpoint rd: the engine's books,
// the strategy, every vector and random stream, and the clock.
func (r *run) restore(rd *checkpoint.Reader) error {
	st, err := readRun(rd)
	if err != nil {
		return err
	}
	var saved []fixed
	if err := json.Unmarshal(st.Identity, &saved); err != nil {
		return fmt.Errorf("engine: checkpoint %s: its settings: %w", rd.Path(), err)
	}
	have := r.identity()
	if len(saved) > len(have) {
		// A sampled run's checkpoint (it lists its output layer) resumed
		// on a dense one: its output weights are stored another way.
		return fmt.Errorf("engine: checkpoint %s is of a run with a sampled output layer (%s): resume it with one", rd.Path(), saved[len(have)].Value)
	}
	// Another number of devices: the run goes on from its model on the new
	// devices (restoreResized); what follows from the devices may differ.
	resized := len(st.Slots) != r.cfg.Devices
	followsDevices := map[string]bool{"devices": true, "speeds": true, "strategy options": true, "lr": true, "batch": true, "fault": true}
	for i, s := range have {
		if i >= len(saved) || saved[i].Name != s.Name {
			return fmt.Errorf("engine: checkpoint %s lists its settings differently: written by another hetsgd", rd.Path())
		}
		if resized && followsDevices[s.Name] {
			continue
		}
		if saved[i].Value != s.Value && !(s.Name == "workload" && s.Value == "xml" && saved[i].Value != "regression") {
			// (An earlier hetsgd named an XML workload by its data's path,
			// which a resumed run may give otherwise: its data is checked
			// by content.)
			return setting.Errorf("engine", "engine: "+s.what+" is %s in the checkpoint's run (%s) and %s here: a resumed run keeps it", saved[i].Value, rd.Path(), s.Value)
		}
	}
	if resized {
		return r.restoreResized(rd, st)
	}
	n := r.cfg.Devices
	if len(st.Slots) != n || len(st.Devices) != n || len(st.Silent) != n || len(st.Gone) != n {
		return fmt.Errorf("engine: checkpoint %s: its books are not of %d devices", rd.Path(), n)
	}
	snap, err := rd.Bytes("strategy")
	if err != nil {
		return err
	}
	if err := r.strat.UnmarshalBinary(snap); err != nil {
		return fmt.Errorf("engine: checkpoint %s: %w", rd.Path(), err)
	}

	for i, gone := range st.Gone {
		if gone {
			r.members.Leave(i)
		}
	}
	if err := r.job.restore(rd, st); err != nil {
		return err
	}

	r.dispatched, r.done, r.nextEval, r.lastEval = st.Dispatched, st.Done, st.NextEval, st.LastEval
	if st.CheckpointStep == r.checkpointStep {
		r.nextCheckpoint = st.NextCheckpoint // the same schedule
	} else if r.checkpointStep != math.MaxInt64 {
		// A new cadence counts from here.
		r.nextCheckpoint = r.done + r.checkpointStep
	}
	if st.EvalStep != r.evalStep {
		// A new evaluation cadence counts from the last evaluation.
		r.nextEval = r.lastEval + r.evalStep
		for r.nextEval <= r.done {
			r.nextEval += r.evalStep
		}
	}
	a := st.Async
	r.async = asyncStats{commits: a.Commits, sinceTau: a.SinceTau, sinceCommits: a.SinceCommits, sinceMax: a.SinceMax, pis: a.Pis}
	copy(r.members.silent, st.Silent)
	for i, s := range st.Slots {
		w := s.Work
		r.slots[i] = slot{busy: s.Busy, dropped: s.Dropped, rows: s.Rows, loss: s.Loss, drop: s.Drop,
			work: work{dev: w.Dev, pos: w.Pos, rows: w.Rows, lr: w.LR, mode: w.Mode}}
	}
	r.restoreHistory(st)
	r.res.Taus = st.Taus

	switch c := r.clk.(type) {
	case *virtualClock:
		vs := st.Virtual
		if vs == nil {
			return setting.Errorf("engine", "engine: checkpoint %s is of a real-clock run: resume it with {Config.Clock} real", rd.Path())
		}
		c.t, c.serverFree, c.netFree, c.seq, c.pending = vs.T, vs.ServerFree, vs.NetFree, vs.Seq, vs.Pending
		if len(vs.Ready) == len(c.ready) {
			copy(c.ready, vs.Ready)
		}
		c.q = c.q[:0]
		for _, e := range vs.Queue {
			c.q.push(vevent{t: e.T, seq: e.Seq, ev: e.Ev, fault: e.Fault, giveUp: e.GiveUp})
		}
	case *realClock:
		rs := st.Real
		if rs == nil {
			return setting.Errorf("engine", "engine: checkpoint %s is of a virtual-clock run: resume it with {Config.Clock} virtual", rd.Path())
		}
		c.resumeAt(st.Now)
		c.faults = c.faults[min(rs.FaultsDone, len(c.faults)):]
		c.queue = append(c.queue[:0], rs.Queue...)
		for _, g := range rs.GiveUps {
			c.giveUps = append(c.giveUps, giveUp{at: g.At, fault: g.Fault})
		}
	}
	r.resumed = true
	return nil
}

// restoreHistory takes up what the saved run has done and said: whether
// its model moved, the training loss since the last evaluation, its
// evaluations, merges, notes, steps and faults, its loss watch and early
// stop. A run resumed on the same devices and one on others share it.
func (r *run) restoreHistory(st *engineState) {
	r.changed, r.lossSum, r.lossRows = st.Changed, st.LossSum, st.LossRows
	// An earlier hetsgd's checkpoint keeps no Moved: its run is taken to
	// have trained.
	r.moved = st.Moved || !st.HasMoved
	r.res.Evals, r.res.Merges, r.res.Async = st.Evals, st.Merges, st.AsyncRecs
	r.res.Notes, r.res.Steps, r.res.Faults = st.Notes, st.Steps, st.Faults
	r.lossWatch, r.res.Diverging, r.res.Stalled = st.LossWatch, st.LossWatch.Warned, st.LossWatch.Stalled
	r.res.StoppedEarly = r.patienceSpent()
}

// restart sets a resumed run going: under the real clock the batches under
// way when it was saved start again, and the dispatches its budget refused
// are asked for again (a longer run continues a finished one).
func (r *run) restart() error {
	if r.cfg.Clock == Real {
		for i := range r.slots {
			s := &r.slots[i]
			if s.busy && !r.members.silenced(i) && !r.members.gone(i) {
				if err := r.clk.dispatch(s.work); err != nil {
					return err
				}
			}
		}
	}
	for i := range r.slots {
		s := &r.slots[i]
		if s.dropped && !r.members.gone(i) {
			s.dropped = false
			a := s.drop
			if err := r.do(&a); err != nil {
				return err
			}
		}
	}
	if r.info.Async && r.done >= r.nextEval {
		// A signal cut short the evaluation due after the strategy's step
		// (stopped saves the run as it stood, the evaluation owed): it is
		// made now, where the uninterrupted run made it, and the
		// checkpoint due after it.
		if err := r.clk.pause(r.evalDue); err != nil {
			return err
		}
		if r.done >= r.nextCheckpoint {
			return r.clk.pause(r.saveDue)
		}
	}
	return nil
}

// Saved says where the run a checkpoint holds had got to.
type Saved struct {
	Samples      int64   // processed
	TrainSeconds float64 // the engine's clock
	// Log is where the run log stood at the checkpoint (the end of its
	// last record, runlog.Log.Position): a resumed run appends there
	// (runlog.AppendLog).
	Log runlog.Position
}

// ReadSaved reads where the run checkpoint rd holds had got to, and the
// caller's settings saved with it (Checkpointing.Settings).
func ReadSaved(rd *checkpoint.Reader) (Saved, []byte, error) {
	st, err := readRun(rd)
	if err != nil {
		return Saved{}, nil, err
	}
	settings, err := rd.Bytes("settings")
	if err != nil {
		return Saved{}, nil, err
	}
	return Saved{Samples: st.Done, TrainSeconds: st.Now,
		Log: runlog.Position{Offset: st.LogOffset, CRC: st.LogCRC, HasCRC: st.LogHasCRC}}, settings, nil
}

// readState decodes the engine's section of a checkpoint.
func readState(rd *checkpoint.Reader) (*engineState, error) {
	b, err := rd.Bytes("engine")
	if err != nil {
		return nil, err
	}
	var st engineState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: its engine state: %w", rd.Path(), err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("engine: checkpoint %s holds engine state of layout %d; this hetsgd reads %d", rd.Path(), st.Version, stateVersion)
	}
	return &st, nil
}

// readRun is readState for a run to continue: a best model's file is not
// one.
func readRun(rd *checkpoint.Reader) (*engineState, error) {
	st, err := readState(rd)
	if err == nil && st.BestOnly {
		return nil, fmt.Errorf("engine: %s holds the model of a run's best evaluation, not a run to continue: resume from a checkpoint of its folder (%s)", rd.Path(), filepath.Dir(rd.Path()))
	}
	return st, err
}

// LoadModel reads the trained model a checkpoint holds — the one its
// strategy evaluates — and its network's shape.
func LoadModel(rd *checkpoint.Reader) (model.Config, []float32, error) {
	st, err := readState(rd)
	if err != nil {
		return model.Config{}, nil, err
	}
	if st.ModelConfig == nil {
		return model.Config{}, nil, fmt.Errorf("engine: checkpoint %s holds no MLP (a run of another workload)", rd.Path())
	}
	m, err := model.New(*st.ModelConfig)
	if err != nil {
		return model.Config{}, nil, fmt.Errorf("engine: checkpoint %s: %w", rd.Path(), err)
	}
	n, err := rd.Len(st.Model)
	if err != nil {
		return model.Config{}, nil, err
	}
	if n != m.NumParams() {
		return model.Config{}, nil, fmt.Errorf("engine: checkpoint %s: its model has %d parameters where its shape needs %d", rd.Path(), n, m.NumParams())
	}
	if err := memory.Check(4*int64(n), fmt.Sprintf("the model of %s (%d parameters)", rd.Path(), n)); err != nil {
		return model.Config{}, nil, err
	}
	p := make([]float32, n)
	if err := rd.FiniteFloat32s(st.Model, p); err != nil {
		return model.Config{}, nil, err
	}
	return m.Config(), p, nil
}
