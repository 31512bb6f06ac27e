package strategytest

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
)

// Conformance checks that the registered strategy name keeps the contract
// of package strategy — whatever its algorithm — by driving it with a
// simulated engine. Every strategy must pass it; strategy/all runs it over
// strategy.List, so a new strategy is checked as soon as it registers.
//
// # The simulated engine
//
// A small event loop plays the engine of package engine: it sends Start,
// keeps which devices are idle or busy, completes the batches under way in
// a seeded pseudo-random order (each device has its own speed and every
// batch a random jitter, so fast devices finish several batches while slow
// ones hold one), answers a Query with an Answer event — what the op says
// its answers look like (strategy.AnswerSampler: Adaptive SGD's norms,
// small enough now and then for its perturbation to fire; AdaCons's
// consensus coefficients about 1 with the gradients' norms, now and then a
// zero gradient's), and for any other op positive numbers of several
// sizes; Dim > 0 — and sends CollectiveDone after
// AllReduce and a Collective. An answer comes before any batch completes,
// as in the engine.
//
// It runs 1, 2, 3 and 4 devices with batches of 8 and 20 and the
// strategy's default batch and learning rate, and 4 devices with the
// strategy's paper preset when it has one, each with DatasetSize set and a
// budget of 1000 batches (40 epochs, so that epoch-based rules such as
// adaptive-code's warm-up and Layered SGD's decay take effect).
//
// # How a run ends
//
// Strategies have no end event: as in the engine, once the budget of
// samples has been dispatched the simulated engine drops every further
// Dispatch (the device never reports back: it stays busy in the strategy's
// eyes), still completes the batches under way and answers collectives and
// queries, and the run ends when nothing is under way. The suite asserts
// that this drain is short and that the strategy never asks for more than
// the budget allows:
//
//   - before the budget is spent the run never stalls: whenever no batch,
//     collective or query is under way, the strategy's last answer must
//     have dispatched something (after CollectiveDone too);
//   - every collective (AllReduce, a Collective) but the first and every
//     query comes after at least one batch completed since the previous one
//     of its kind,
//     so a strategy cannot loop on collectives, and the drain ends at most
//     one query and one collective after the last batch;
//   - a dropped batch never completes, so the device must not be dispatched
//     again: the samples asked for never exceed the budget plus one batch
//     per device plus the batch that crossed the budget.
//
// # What every step must satisfy
//
//   - Determinism: a second strategy built from the same config, and a third
//     built with every option given explicitly at its resolved value, fed the
//     same events, give the same actions.
//   - Snapshots: a strategy snapshotted (MarshalBinary) at the start, at a
//     quarter, half and three quarters of the run and before its last event,
//     and restored (UnmarshalBinary) into one New built from the same config,
//     answers the rest of the events as the run did, and so does the one
//     snapshotted; the restored one's snapshot is the same bytes. A snapshot
//     restores with an error, never silently, into a strategy of fewer
//     devices, and half a snapshot is an error.
//   - Dispatch: a device in range that is idle (never one busy, nor one whose
//     batch was dropped), a batch in [1, Info.MaxBatchOf(cfg)], a finite
//     learning rate > 0, a known Mode; not to a device holding a Gradient- or
//     Pull-mode gradient that no AllReduce, op that applies gradients or
//     Commit applied yet.
//   - AllReduce, Collective and Query only when every device is idle (a
//     query too: the engine reads every replica), and nothing after them in
//     the same step: their answer is the next event. AllReduce and the ops
//     that read the gradients (strategy.GradientUser) need a gradient
//     computed in Gradient mode on every device and not yet applied. The op
//     an action names is registered and of the right kind (Collector,
//     Measurer, Committer), and its Check accepts the action.
//   - Commit only from Info.Async strategies, while other devices may be
//     busy, but only in the answer to BatchDone of the committing device,
//     once for it, after a batch in Pull mode or a local step (the end of a
//     local round), with Tau the number of commits since the device last had
//     the centre (its Pull, or its own previous commit).
//   - Weights of AllReduce and of a Collective that has them: one per
//     device, finite, ≥ 0, summing to
//     1 within 1e-9 (relative to Σ|w|). A strategy with a "delta" option
//     and "renorm" 0 (Adaptive SGD as printed, whose perturbation multiplies
//     the most- and least-updated replicas' weights by 1±δ) may have Merge
//     weights summing to 1 within δ. (AllReduce weights need not sum to 1 under AdaCons's --eq13
//     1, the paper's eq. 13 as printed; the suite runs default options and
//     paper presets only, where they must.) Learning rates finite and > 0;
//     a MergeRecord has one entry per device.
//   - AdaCons's weights are its consensus coefficients normalized to sum 1:
//     a negative coefficient (a gradient pointing away from the mean, which
//     the real engine can report) gives a negative weight, as in the paper.
//     The suite allows it rather than calling it a bug: the 4-device runs
//     send a negative coefficient in their first answer and now and then
//     after, and from then on AllReduce weights may be negative (the
//     momentum of the sorted coefficients carries a negative value into
//     later steps), but must still be finite and sum to 1. The other runs
//     send coefficients ≥ 0 or NaN only, and there every weight must be ≥ 0.
//
// # Devices leaving the run
//
// With 4 devices the simulated engine also takes devices out of the run
// (strategy.Leave) at chosen points, one run for each: as the first event
// after Start; while the device's batch is under way and others' too; while
// it is idle and others work (it waits at a barrier); while its batch is the
// only one under way (the last one a barrier waits for, which only the Leave
// can end); during a collective, before its CollectiveDone (the engine's
// clock may strike a fault then: the Leave must be answered with nothing,
// the collective being under way). Device 0 leaves in one run, and in
// another three devices leave one after the other. The engine then never
// reports the device's batch, sends no more of its events, and answers NaN
// for it in Norms (its norm) and Consensus (its coefficient and its
// gradient's norm). Right after each Leave (after the CollectiveDone of a
// collective under way) it sends a second Leave for the same device and
// Leaves for devices -1 and n, which must be answered with nothing. On top
// of the checks above:
//
//   - no Dispatch to a device that left;
//   - collectives and queries need only the devices in the run idle (and,
//     where they need gradients, holding one);
//   - the weights of AllReduce and Merge, and of a MergeRecord, are 0 for
//     the devices that left, finite for all, and sum to 1 as above;
//   - the run never stalls and ends as above, the lost batches allowing one
//     more batch each to be asked for;
//   - the events replay to the same actions (determinism).
//
// A plan that never came about fails the check (nothing was tested), except
// for Info.Async strategies, which have no collective and whose workers are
// never idle nor alone at work.
//
// # One device
//
// With one device, the strategies whose package documentation says they
// are plain mini-batch SGD then (see plainSGD) must emit exactly that: every
// Dispatch to device 0 with the config's batch and learning rate in their
// mode, AllReduce with weights [1] at the config's rate, merges with weights
// [1] and no momentum (strategy.IdentityMerge) and no other collective, and
// commits by the downpour or staleness rule with Tau 0.
//
// # Settings
//
// strategy.New rejects, with an error and not a panic, 0 or negative devices
// or batch, a learning rate that is 0, negative, NaN or infinite, an option
// the strategy does not take, and an option that is NaN or infinite; it never
// panics on out-of-range option values or a missing DatasetSize. Resolve and
// Describe give every declared option, in order, as a finite number (Describe
// with its Formula for a derived default not given, and Given set when it
// is), and the largest batch is at least 1.
//
// Each of variants, option values beside the defaults (a strategy's
// options that change its rules, such as adaptive's clamp), is also run on
// 4 devices at each batch.
//
// Failures name the strategy, the config, the step and its event, and show
// the last steps of the run.
func Conformance(t *testing.T, name string, variants ...map[string]float64) {
	t.Helper()
	info, err := strategy.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Summary == "" {
		t.Errorf("%s: Info.Summary is empty", name)
	}
	t.Run("settings", func(t *testing.T) { checkSettings(t, info) })
	for _, c := range conformanceConfigs(info, variants) {
		t.Run(c.name, func(t *testing.T) {
			checkResolve(t, info, c)
			tr := simulate(t, info, c)
			checkDeterminism(t, info, c, tr)
		})
	}
	t.Run("one-device", func(t *testing.T) { checkOneDevice(t, info) })
	t.Run("leave", func(t *testing.T) { checkMembership(t, info) })
}

// plainSGD lists the strategies whose documentation says that on one device
// they are plain mini-batch SGD, with the mode of their batches and the
// options that make them so.
//
//   - syncsgd ("sync", "lsgd", "sum"): "equal to single-device SGD on the union
//     batch" (without --warmup and --decay-every, both off by default).
//   - adacons: "with equal gradients every c_i is 1 and AdaCons is averaging";
//     one device's weight normalizes to 1.
//   - elastic: K local steps, then the average of one replica.
//   - crossbow: "a single-device CROSSBOW is plain mini-batch SGD".
//   - adaptive: "with one device ... Adaptive SGD is mini-batch SGD".
//   - adaptive-code: the same once its schedule is off (no warm-up, no decay).
//   - ps ("downpour", "staleness"): one worker pulls, computes and commits Δ
//     with staleness 0, which the Staleness rule divides by 1.
//
// "gem" is not here: with one worker its energy matching scales Δ by
// π = clamp(κ|m|/(|Δ| + ε), 0, clip), which is momentum SGD, not plain SGD.
var plainSGD = map[string]struct {
	mode    strategy.Mode
	options map[string]float64
}{
	"sync":          {strategy.Gradient, nil},
	"lsgd":          {strategy.Gradient, nil},
	"sum":           {strategy.Gradient, nil},
	"slide":         {strategy.Gradient, nil},
	"adacons":       {strategy.Gradient, nil},
	"elastic":       {strategy.LocalStep, nil},
	"crossbow":      {strategy.LocalStep, nil},
	"adaptive":      {strategy.LocalStep, nil},
	"adaptive-code": {strategy.LocalStep, map[string]float64{"warmup": 0, "decay": 0}},
	"downpour":      {strategy.Pull, nil},
	"staleness":     {strategy.Pull, nil},
}

// conformanceConfig is one simulated run.
type conformanceConfig struct {
	name     string
	cfg      strategy.Config
	budget   int64  // samples
	seed     uint64 // of the simulated engine
	negative bool   // send negative consensus coefficients now and then
	leaves   []leavePlan
}

// leaveWhen says at which point of a run the simulated engine takes a device
// out of it.
type leaveWhen uint8

const (
	atStart   leaveWhen = iota // the first event after Start
	whileBusy                  // its batch under way, and another device's too
	whileIdle                  // idle (waiting at a barrier) while another works
	whenLast                   // its batch the only one under way
	// during a collective, before its CollectiveDone (the engine's clock may
	// strike a fault while a collective runs)
	duringCollective
)

func (w leaveWhen) String() string {
	return [...]string{"at start", "while busy", "while idle", "as the last one working", "during a collective"}[w]
}

// leavePlan is one Leave of a simulated run: device leaves at the first
// point from step after on where when holds. The plans of a run come about
// in order.
type leavePlan struct {
	device int
	when   leaveWhen
	after  int
}

func conformanceConfigs(info strategy.Info, variants []map[string]float64) []conformanceConfig {
	mk := func(name string, n, b int, lr float64, opts map[string]float64, seed uint64) conformanceConfig {
		budget := int64(1000*b + b/2 + 1) // not a whole number of batches
		return conformanceConfig{name: name, seed: seed, budget: budget, negative: n == 4,
			cfg: strategy.Config{Devices: n, Batch: b, LR: lr, DatasetSize: int(budget / 40), Options: opts}}
	}
	var out []conformanceConfig
	batches := []struct {
		b  int
		lr float64
	}{{8, 0.1}, {20, 0.05}}
	if d := info.Defaults; d.Batch != 8 && d.Batch != 20 {
		batches = append(batches, struct {
			b  int
			lr float64
		}{d.Batch, d.LR})
	}
	for n := 1; n <= 4; n++ {
		for i, b := range batches {
			out = append(out, mk(fmt.Sprintf("devices=%d,batch=%d", n, b.b), n, b.b, b.lr, nil, uint64(100*n+i)))
		}
	}
	for v, opts := range variants {
		for i, b := range batches {
			c := mk(fmt.Sprintf("devices=4,batch=%d", b.b), 4, b.b, b.lr, cloneOptions(opts), uint64(1000+10*v+i))
			c.name += optionsString(opts)
			out = append(out, c)
		}
	}
	if p := info.Paper; p != nil {
		b, lr := p.Settings.Batch, p.Settings.LR
		if b == 0 {
			b, lr = info.Defaults.Batch, info.Defaults.LR
		}
		out = append(out, mk("paper", 4, b, lr, cloneOptions(p.Options), 7))
	}
	return out
}

func cloneOptions(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// newStrategy calls strategy.New, turning a panic into an error that says so.
func newStrategy(name string, cfg strategy.Config) (s strategy.Strategy, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	cfg.Options = cloneOptions(cfg.Options)
	s, _, err = strategy.New(name, cfg)
	return s, err
}

func describeConfig(c strategy.Config) string {
	return fmt.Sprintf("devices=%d batch=%d lr=%g size=%d", c.Devices, c.Batch, c.LR, c.DatasetSize) +
		strings.ReplaceAll(optionsString(c.Options), ",", " ")
}

// optionsString writes options as ",k=v" in the order of their names.
func optionsString(opts map[string]float64) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		s += fmt.Sprintf(",%s=%g", k, opts[k])
	}
	return s
}

// checkSettings: strategy.New rejects bad common settings and options with
// an error, and never panics.
func checkSettings(t *testing.T, info strategy.Info) {
	good := strategy.Config{Devices: 2, Batch: 16, LR: 0.1, DatasetSize: 1000}
	if _, err := newStrategy(info.Name, good); err != nil {
		t.Fatalf("%s: New(%s): %v", info.Name, describeConfig(good), err)
	}
	type bad struct {
		what string
		cfg  strategy.Config
	}
	var rejects []bad
	for _, n := range []int{0, -1} {
		c := good
		c.Devices = n
		rejects = append(rejects, bad{fmt.Sprintf("Devices %d", n), c})
	}
	for _, b := range []int{0, -1} {
		c := good
		c.Batch = b
		rejects = append(rejects, bad{fmt.Sprintf("Batch %d", b), c})
	}
	for _, lr := range []float64{0, -0.1, math.NaN(), math.Inf(1)} {
		c := good
		c.LR = lr
		rejects = append(rejects, bad{fmt.Sprintf("LR %v", lr), c})
	}
	c := good
	c.Options = map[string]float64{"no-such-option": 1}
	rejects = append(rejects, bad{"unknown option no-such-option", c})
	for _, o := range info.Options {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			c := good
			c.Options = map[string]float64{o.Name: v}
			rejects = append(rejects, bad{fmt.Sprintf("option %s = %v", o.Name, v), c})
		}
	}
	for _, r := range rejects {
		s, err := newStrategy(info.Name, r.cfg)
		switch {
		case err != nil && strings.HasPrefix(err.Error(), "panic: "):
			t.Errorf("%s: New with %s panics instead of returning an error: %v", info.Name, r.what, err)
		case err == nil || s != nil:
			t.Errorf("%s: New with %s (%s) gives no error", info.Name, r.what, describeConfig(r.cfg))
		}
	}
	// Out-of-range values and a missing training-set size: an error or a
	// strategy, never a panic.
	for _, o := range info.Options {
		for _, v := range []float64{-1, 0, 0.5, 1e300, -1e300} {
			c := good
			c.Options = map[string]float64{o.Name: v}
			if _, err := newStrategy(info.Name, c); err != nil && strings.HasPrefix(err.Error(), "panic: ") {
				t.Errorf("%s: New with option %s = %v: %v", info.Name, o.Name, v, err)
			}
		}
	}
	for _, size := range []int{0, -1} {
		c := good
		c.DatasetSize = size
		if _, err := newStrategy(info.Name, c); err != nil && strings.HasPrefix(err.Error(), "panic: ") {
			t.Errorf("%s: New with DatasetSize %d: %v", info.Name, size, err)
		}
	}
}

// checkResolve: Resolve and Describe give every option as a finite number,
// in declaration order, and agree; giving the values explicitly changes
// nothing but Given.
func checkResolve(t *testing.T, info strategy.Info, c conformanceConfig) {
	where := info.Name + " (" + describeConfig(c.cfg) + ")"
	opts, err := info.Resolve(c.cfg)
	if err != nil {
		t.Fatalf("%s: Resolve: %v", where, err)
	}
	if len(opts) != len(info.Options) {
		t.Errorf("%s: Resolve gives %d options for %d declared", where, len(opts), len(info.Options))
	}
	for _, o := range info.Options {
		v, ok := opts[o.Name]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s: option %s resolves to %v (present %v): want a finite number", where, o.Name, v, ok)
		}
	}
	for _, explicit := range []bool{false, true} {
		cfg := c.cfg
		if explicit {
			cfg.Options = opts
		}
		vals, err := info.Describe(cfg)
		if err != nil {
			t.Fatalf("%s: Describe: %v", where, err)
		}
		if len(vals) != len(info.Options) {
			t.Fatalf("%s: Describe gives %d values for %d options", where, len(vals), len(info.Options))
		}
		for i, o := range info.Options {
			v := vals[i]
			_, given := cfg.Options[o.Name]
			wantFormula := ""
			if !given && o.Derive != nil {
				wantFormula = o.Formula
			}
			if v.Name != o.Name || math.Float64bits(v.Value) != math.Float64bits(opts[o.Name]) || v.Given != given || v.Formula != wantFormula {
				t.Errorf("%s: Describe (options given: %v) value %d = %+v; want option %s = %v, given %v, formula %q",
					where, explicit, i, v, o.Name, opts[o.Name], given, wantFormula)
			}
		}
	}
	if mb := info.MaxBatchOf(c.cfg); mb < 1 {
		t.Errorf("%s: MaxBatchOf = %d, want ≥ 1", where, mb)
	}
}

// step is one event of a simulated run and the actions it caused.
type step struct {
	ev   strategy.Event
	acts []strategy.Action
}

// cloneAction copies what an action refers to: a strategy's Weights are
// valid until its next Step.
func cloneAction(a strategy.Action) strategy.Action {
	a.Weights = slices.Clone(a.Weights)
	if r := a.Record; r != nil {
		c := *r
		c.BatchSizes, c.LRs, c.Updates, c.Weights = slices.Clone(r.BatchSizes), slices.Clone(r.LRs), slices.Clone(r.Updates), slices.Clone(r.Weights)
		a.Record = &c
	}
	return a
}

// formatActions writes actions for a failure message, every field.
func formatActions(acts []strategy.Action) string {
	var b strings.Builder
	for _, a := range acts {
		fmt.Fprintf(&b, "\n    %s  %+v", Format(a), a)
		if a.Record != nil {
			fmt.Fprintf(&b, " record %+v", *a.Record)
		}
	}
	if len(acts) == 0 {
		b.WriteString("\n    nothing")
	}
	return b.String()
}

func eventString(ev strategy.Event) string {
	switch ev.Kind {
	case strategy.BatchDone:
		return fmt.Sprintf("batch-done dev=%d", ev.Device)
	case strategy.Answer:
		return fmt.Sprintf("answer %.4g second=%.4g dim=%d", ev.Values, ev.Second, ev.Dim)
	case strategy.Leave:
		return fmt.Sprintf("leave dev=%d", ev.Device)
	}
	return ev.Kind.String()
}

// sim is the simulated engine of one run.
type sim struct {
	t        *testing.T
	info     strategy.Info
	c        conformanceConfig
	n        int
	maxBatch int
	hasDelta bool
	delta    float64
	rng      *rand.Rand

	now      float64
	speed    []float64 // seconds per sample, per device
	busy     []bool    // a batch under way, which will complete
	lost     []bool    // a batch dispatched after the budget: it never completes
	finish   []float64 // when the batch under way completes
	mode     []strategy.Mode
	gradient []bool // a Gradient-mode gradient no AllReduce applied yet
	pulled   []bool // a Pull-mode gradient no Commit applied yet
	local    []bool // local steps since the device last had the centre (a local round a Commit may end)
	pulledAt []int  // commits when the device last had the centre: its last Pull, or its own last commit
	commits  int
	gone     []bool           // left the run
	left     int              // how many
	planned  int              // the leave plans that came about
	queue    []strategy.Event // Leaves to ignore, sent before anything else
	ignored  bool             // the event is one of them: it must cause nothing
	held     bool             // the event is a Leave during a collective: it must cause nothing

	accepted, asked                int64 // samples dispatched, and asked for including dropped ones
	answer                         *strategy.Event
	sinceCollective, sinceQuery    int // batches completed since the last collective, query
	negativeSent                   bool
	stepNo                         int
	ev                             strategy.Event
	acts                           []strategy.Action
	lastEvent                      string
	committed, afterAnswer         bool
	answerKind                     strategy.ActionKind
	trace                          []step
	collectives, queries, dispatch int
}

func (s *sim) failf(format string, args ...any) {
	s.t.Helper()
	var recent strings.Builder
	for _, st := range s.trace[max(0, len(s.trace)-4):] {
		fmt.Fprintf(&recent, "\n    %s", eventString(st.ev))
		for _, a := range st.acts {
			fmt.Fprintf(&recent, "\n      -> %s", Format(a))
		}
	}
	s.t.Fatalf("%s (%s): step %d (%s): %s\n  last steps:%s", s.info.Name, describeConfig(s.c.cfg), s.stepNo, eventString(s.ev),
		fmt.Sprintf(format, args...), recent.String())
}

// simulate runs the strategy of c under the simulated engine, checking
// every step, and returns the transcript.
func simulate(t *testing.T, info strategy.Info, c conformanceConfig) []step {
	t.Helper()
	st, err := newStrategy(info.Name, c.cfg)
	if err != nil {
		t.Fatalf("%s (%s): New: %v", info.Name, describeConfig(c.cfg), err)
	}
	n := c.cfg.Devices
	s := &sim{t: t, info: info, c: c, n: n, maxBatch: info.MaxBatchOf(c.cfg),
		rng:   rand.New(rand.NewPCG(c.seed, 0x5eed)),
		speed: make([]float64, n), busy: make([]bool, n), lost: make([]bool, n), finish: make([]float64, n),
		mode: make([]strategy.Mode, n), gradient: make([]bool, n), pulled: make([]bool, n), local: make([]bool, n), pulledAt: make([]int, n),
		gone: make([]bool, n)}
	if opts, err := info.Resolve(c.cfg); err == nil {
		s.delta, s.hasDelta = opts["delta"]
		s.hasDelta = s.hasDelta && opts["renorm"] == 0
	}
	for d := range s.speed {
		s.speed[d] = 0.5 + 1.5*s.rng.Float64()
	}
	// Every batch completes at most once and each answer needs a batch
	// before it (checked below), so a run has fewer steps than this.
	limit := 4*int(c.budget) + 100
	s.ev = strategy.Event{Kind: strategy.Start}
	for s.stepNo = 0; ; s.stepNo++ {
		if s.stepNo > limit {
			s.failf("the run does not end: %d events for a budget of %d samples", s.stepNo, c.budget)
		}
		s.acts = st.Step(s.ev, s.acts[:0])
		if s.ignored && len(s.acts) > 0 {
			s.failf("answers %s: a Leave for a device that already left, or for no device, is to be ignored", Format(s.acts[0]))
		}
		if s.held && len(s.acts) > 0 {
			s.failf("answers %s while a collective is under way: wait for its CollectiveDone", Format(s.acts[0]))
		}
		rec := step{ev: s.ev}
		for _, a := range s.acts {
			rec.acts = append(rec.acts, cloneAction(a))
		}
		s.trace = append(s.trace, rec)
		s.committed, s.afterAnswer = false, false
		for i := range rec.acts {
			s.apply(rec.acts[i])
		}
		if !s.next() {
			break
		}
	}
	if s.dispatch == 0 {
		t.Fatalf("%s (%s): no batch was ever dispatched", info.Name, describeConfig(c.cfg))
	}
	if s.planned < len(c.leaves) && !info.Async {
		p := c.leaves[s.planned]
		t.Fatalf("%s (%s): device %d never left %s after step %d: the run tested nothing", info.Name, describeConfig(c.cfg), p.device, p.when, p.after)
	}
	return s.trace
}

// due reports whether the leave plan p comes about now.
func (s *sim) due(p leavePlan) bool {
	if s.stepNo < p.after || s.gone[p.device] {
		return false
	}
	if p.when == duringCollective || s.answer != nil {
		return p.when == duringCollective && s.answer != nil && s.answer.Kind == strategy.CollectiveDone
	}
	others := false // another device's batch is under way
	for d, b := range s.busy {
		others = others || b && d != p.device
	}
	switch p.when {
	case whileBusy:
		return s.busy[p.device] && others
	case whileIdle:
		return !s.busy[p.device] && !s.lost[p.device] && others
	case whenLast:
		return s.busy[p.device] && !others
	}
	return true
}

// leave takes device d out of the run: its batch, if any, is lost, and the
// Leaves to ignore follow.
func (s *sim) leave(d int) {
	s.ev = strategy.Event{Kind: strategy.Leave, Device: d}
	s.gone[d] = true
	s.left++
	s.busy[d], s.lost[d], s.gradient[d], s.pulled[d] = false, false, false, false
	for _, e := range []int{d, -1, s.n} {
		s.queue = append(s.queue, strategy.Event{Kind: strategy.Leave, Device: e})
	}
}

// next picks the next event; false when nothing is under way.
func (s *sim) next() bool {
	s.ignored, s.held = false, false
	if s.answer != nil {
		if s.planned < len(s.c.leaves) && s.due(s.c.leaves[s.planned]) {
			s.leave(s.c.leaves[s.planned].device)
			s.planned++
			s.held = true
			return true
		}
		s.ev, s.answer = *s.answer, nil
		return true
	}
	if len(s.queue) > 0 {
		s.ev, s.queue, s.ignored = s.queue[0], s.queue[1:], true
		return true
	}
	if s.planned < len(s.c.leaves) && s.due(s.c.leaves[s.planned]) {
		s.leave(s.c.leaves[s.planned].device)
		s.planned++
		return true
	}
	d := -1
	for i, b := range s.busy {
		if b && (d < 0 || s.finish[i] < s.finish[d]) {
			d = i
		}
	}
	if d < 0 {
		if s.accepted < s.c.budget {
			s.failf("the run stalls: no batch, collective or query under way, and %d of the budget's %d samples left", s.c.budget-s.accepted, s.c.budget)
		}
		return false
	}
	s.now = s.finish[d]
	s.busy[d] = false
	switch s.mode[d] {
	case strategy.Gradient:
		s.gradient[d] = true
	case strategy.Pull:
		s.pulled[d] = true
	case strategy.LocalStep:
		s.local[d] = true
	}
	s.sinceCollective++
	s.sinceQuery++
	s.ev = strategy.Event{Kind: strategy.BatchDone, Device: d}
	return true
}

func (s *sim) allIdle() (int, bool) {
	for d := range s.busy {
		if (s.busy[d] || s.lost[d]) && !s.gone[d] {
			return d, false
		}
	}
	return -1, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// apply checks one action and carries it out.
func (s *sim) apply(a strategy.Action) {
	if s.afterAnswer {
		s.failf("%s follows %s in the same step: a collective or query is answered before anything else happens", Format(a), s.answerKind)
	}
	switch a.Kind {
	case strategy.Dispatch:
		s.dispatch++
		d := a.Device
		switch {
		case d < 0 || d >= s.n:
			s.failf("%s: no device %d of %d", Format(a), d, s.n)
		case s.gone[d]:
			s.failf("%s: device %d left the run", Format(a), d)
		case s.busy[d]:
			s.failf("%s: device %d is busy with a batch", Format(a), d)
		case s.lost[d]:
			s.failf("%s: device %d was given a batch after the budget ran out, which never completed (the strategy should still be waiting for it)", Format(a), d)
		case a.Batch < 1 || a.Batch > s.maxBatch:
			s.failf("%s: batch %d outside [1, MaxBatchOf = %d]", Format(a), a.Batch, s.maxBatch)
		case !finite(a.LR) || !(a.LR > 0):
			s.failf("%s: learning rate %v, want a finite rate > 0", Format(a), a.LR)
		case a.Mode > strategy.Pull:
			s.failf("%s: unknown mode %d", Format(a), a.Mode)
		case s.gradient[d]:
			s.failf("%s: device %d holds a Gradient-mode gradient that no AllReduce or synchronisation with the gradient applied", Format(a), d)
		case s.pulled[d]:
			s.failf("%s: device %d holds a Pull-mode gradient that no Commit applied", Format(a), d)
		}
		s.asked += int64(a.Batch)
		if limit := s.c.budget + int64((s.n+1+s.left)*s.maxBatch); s.asked > limit {
			s.failf("%s: %d samples asked for, more than the budget %d plus one batch per device, the batch that crossed it and one per lost batch (%d)", Format(a), s.asked, s.c.budget, limit)
		}
		s.mode[d] = a.Mode
		if a.Mode == strategy.Pull {
			s.pulledAt[d] = s.commits
		}
		if s.accepted >= s.c.budget {
			s.lost[d] = true // dropped, as the engine drops work past its budget
			return
		}
		s.accepted += int64(a.Batch)
		s.busy[d] = true
		jitter := 0.7 + 0.6*s.rng.Float64()
		if s.rng.IntN(20) == 0 {
			jitter *= 5 // a straggler
		}
		s.finish[d] = s.now + float64(a.Batch)*s.speed[d]*jitter
	case strategy.AllReduce, strategy.Collective:
		s.collectives++
		if d, ok := s.allIdle(); !ok {
			s.failf("%s while device %d is busy: collectives need every device idle", Format(a), d)
		}
		if s.sinceCollective == 0 && s.collectives > 1 {
			s.failf("%s with no batch completed since the previous collective", Format(a))
		}
		s.sinceCollective = 0
		s.checkCollective(a)
		s.answer = &strategy.Event{Kind: strategy.CollectiveDone}
		s.afterAnswer, s.answerKind = true, a.Kind
	case strategy.Query:
		s.queries++
		if _, ok := s.op(a).(strategy.Measurer); !ok {
			s.failf("%s: op %q does not answer queries", Format(a), a.Op)
		}
		if gu, ok := s.op(a).(strategy.GradientUser); ok {
			if reads, _ := gu.Gradients(&a); reads {
				s.needGradients(a)
			}
		}
		if d, ok := s.allIdle(); !ok {
			s.failf("%s while device %d is busy: the engine reads every device", Format(a), d)
		}
		if s.sinceQuery == 0 {
			s.failf("%s with no batch completed since the previous query", Format(a))
		}
		s.sinceQuery = 0
		ev := strategy.Event{Kind: strategy.Answer, Values: make([]float64, s.n), Second: make([]float64, s.n), Dim: 1000}
		// The op says what its answers look like (strategy.AnswerSampler);
		// any other op's are positive numbers of either size.
		if sm, ok := s.op(a).(strategy.AnswerSampler); ok {
			if sm.SampleAnswer(s.rng, s.gone, s.c.negative, s.c.negative && !s.negativeSent, ev.Values, ev.Second) {
				s.negativeSent = true
			}
		} else {
			for i := range ev.Values {
				ev.Values[i], ev.Second[i] = s.rng.Float64()*math.Pow(10, float64(s.rng.IntN(7)-3)), s.rng.Float64()
				if s.gone[i] {
					ev.Values[i], ev.Second[i] = math.NaN(), math.NaN()
				}
			}
		}
		s.answer = &ev
		s.afterAnswer, s.answerKind = true, a.Kind
	case strategy.Commit:
		d := a.Device
		switch {
		case !s.info.Async:
			s.failf("%s: only Async strategies (parameter servers) commit", Format(a))
		case s.ev.Kind != strategy.BatchDone || s.ev.Device != d:
			s.failf("%s: a device commits in the answer to its own batch-done", Format(a))
		case s.committed:
			s.failf("%s: a second commit for one batch", Format(a))
		case !s.pulled[d] && !(s.local[d] && s.mode[d] == strategy.LocalStep):
			s.failf("%s: device %d's batch was neither a Pull nor the last local step of a round", Format(a), d)
		case !finite(a.LR) || !(a.LR > 0):
			s.failf("%s: learning rate %v, want a finite rate > 0", Format(a), a.LR)
		case a.Tau != s.commits-s.pulledAt[d]:
			s.failf("%s: tau %d, but %d commits happened since device %d pulled", Format(a), a.Tau, s.commits-s.pulledAt[d], d)
		}
		if op, ok := s.op(a).(strategy.Committer); !ok {
			s.failf("%s: op %q does not commit", Format(a), a.Op)
		} else if err := op.Check(&a, s.n); err != nil {
			s.failf("%s: %v", Format(a), err)
		}
		s.committed = true
		s.pulled[d], s.local[d] = false, false
		s.commits++
		s.pulledAt[d] = s.commits // the worker goes on from the centre its commit made
	default:
		s.failf("unknown action kind %d", a.Kind)
	}
}

// opIf returns the op of an action that runs one (Collective, Query,
// Commit), else nil.
func (s *sim) opIf(a strategy.Action) strategy.Op {
	if a.Kind == strategy.Collective || a.Kind == strategy.Query || a.Kind == strategy.Commit {
		return s.op(a)
	}
	return nil
}

// op returns the op an action names, failing the run for an unknown one.
func (s *sim) op(a strategy.Action) strategy.Op {
	op, err := strategy.NewOp(a.Op)
	if err != nil {
		s.failf("%s: %v", Format(a), err)
	}
	return op
}

// needGradients checks that every device holds a Gradient-mode gradient
// not yet applied.
func (s *sim) needGradients(a strategy.Action) {
	for d, ok := range s.gradient {
		if !ok && !s.gone[d] {
			s.failf("%s: device %d holds no Gradient-mode gradient that is not yet applied", Format(a), d)
		}
	}
}

func (s *sim) checkCollective(a strategy.Action) {
	if a.Kind == strategy.Collective {
		if op, ok := s.op(a).(strategy.Collector); !ok {
			s.failf("%s: op %q is not a collective", Format(a), a.Op)
		} else if err := op.Check(&a, s.n); err != nil {
			s.failf("%s: %v", Format(a), err)
		}
	}
	// An op that reads the devices' gradients needs them; one that applies
	// them leaves none, at its rate.
	if gu, ok := s.opIf(a).(strategy.GradientUser); ok {
		if reads, applies := gu.Gradients(&a); reads {
			s.needGradients(a)
			if applies {
				clear(s.gradient)
				if !finite(a.LR) || !(a.LR > 0) {
					s.failf("%s: learning rate %v, want a finite rate > 0", Format(a), a.LR)
				}
			}
		}
	}
	if a.Kind == strategy.Collective && a.Weights == nil {
		return
	}
	w := a.Weights
	if len(w) != s.n {
		s.failf("%s: %d weights for %d devices", Format(a), len(w), s.n)
	}
	var sum, abs float64
	for d, v := range w {
		if !finite(v) {
			s.failf("%s: weight %d is %v", Format(a), d, v)
		}
		if s.gone[d] && v != 0 {
			s.failf("%s: weight %d is %v, but device %d left the run", Format(a), d, v, d)
		}
		if v < 0 && !(a.Kind == strategy.AllReduce && s.negativeSent) {
			s.failf("%s: weight %d is negative (%v)", Format(a), d, v)
		}
		sum += v
		abs += math.Abs(v)
	}
	tol := 1e-9 * max(1, abs)
	if a.Op == strategy.MergeOp && s.hasDelta {
		tol += s.delta // the paper's perturbation: 1 ± δ(α_max − α_min)
	}
	if math.Abs(sum-1) > tol {
		s.failf("%s: weights sum to %.17g, want 1 within %g", Format(a), sum, tol)
	}
	switch a.Kind {
	case strategy.AllReduce:
		s.needGradients(a)
		clear(s.gradient)
		if !finite(a.LR) || !(a.LR > 0) {
			s.failf("%s: learning rate %v, want a finite rate > 0", Format(a), a.LR)
		}
	case strategy.Collective:
		if r := a.Record; r != nil {
			if len(r.BatchSizes) != s.n || len(r.LRs) != s.n || len(r.Updates) != s.n || len(r.Weights) != s.n {
				s.failf("%s: merge record %+v: want one entry per device", Format(a), *r)
			}
			for i := range r.LRs {
				if !finite(r.LRs[i]) || !finite(r.Weights[i]) {
					s.failf("%s: merge record %+v is not finite", Format(a), *r)
				}
				if s.gone[i] && r.Weights[i] != 0 {
					s.failf("%s: merge record %+v: weight %d is not 0, but device %d left the run", Format(a), *r, i, i)
				}
			}
		}
	}
}

// checkDeterminism replays the events of tr to a strategy built from the
// same config, and to one built with every option given at its resolved
// value; both must answer with the same actions.
func checkDeterminism(t *testing.T, info strategy.Info, c conformanceConfig, tr []step) {
	opts, err := info.Resolve(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	explicit := c.cfg
	explicit.Options = opts
	for _, v := range []struct {
		what string
		cfg  strategy.Config
	}{{"a second strategy from the same config", c.cfg}, {"a strategy with every option given at its default", explicit}} {
		s, err := newStrategy(info.Name, v.cfg)
		if err != nil {
			t.Fatalf("%s (%s): New: %v", info.Name, describeConfig(v.cfg), err)
		}
		replay(t, info, c, tr, s, 0, v.what)
	}
	// Restored from snapshots: at the start, at a quarter, half and three
	// quarters of the run, and before its last event.
	for _, k := range []int{0, len(tr) / 4, len(tr) / 2, 3 * len(tr) / 4, len(tr) - 1} {
		s, err := newStrategy(info.Name, c.cfg)
		if err != nil {
			t.Fatalf("%s (%s): New: %v", info.Name, describeConfig(c.cfg), err)
		}
		replay(t, info, c, tr[:k], s, 0, "the strategy")
		snap, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("%s (%s): MarshalBinary after %d steps: %v", info.Name, describeConfig(c.cfg), k, err)
		}
		r, err := newStrategy(info.Name, c.cfg)
		if err != nil {
			t.Fatalf("%s (%s): New: %v", info.Name, describeConfig(c.cfg), err)
		}
		if err := r.UnmarshalBinary(snap); err != nil {
			t.Fatalf("%s (%s): UnmarshalBinary of its snapshot after %d steps: %v", info.Name, describeConfig(c.cfg), k, err)
		}
		again, err := r.MarshalBinary()
		if err != nil || !bytes.Equal(again, snap) {
			t.Fatalf("%s (%s): the snapshot after %d steps, restored and taken again, differs (error %v)", info.Name, describeConfig(c.cfg), k, err)
		}
		// The saved strategy goes on too: its snapshot must not share
		// state with the restored one.
		replay(t, info, c, tr[k:], s, k, "the strategy that was saved")
		replay(t, info, c, tr[k:], r, k, fmt.Sprintf("a strategy restored from a snapshot after step %d", k))
	}
	// A snapshot of another configuration is refused, not misread.
	if c.cfg.Devices > 1 && len(tr) > 0 {
		s, _ := newStrategy(info.Name, c.cfg)
		replay(t, info, c, tr[:1], s, 0, "the strategy")
		snap, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		other := c.cfg
		other.Devices--
		if r, err := newStrategy(info.Name, other); err == nil {
			if err := r.UnmarshalBinary(snap); err == nil {
				t.Errorf("%s (%s): a snapshot of %d devices restores into a strategy of %d without an error", info.Name, describeConfig(c.cfg), c.cfg.Devices, other.Devices)
			}
		}
		if err := s.UnmarshalBinary(snap[:len(snap)/2]); err == nil {
			t.Errorf("%s (%s): half a snapshot restores without an error", info.Name, describeConfig(c.cfg))
		}
	}
}

// replay feeds the events of tr, steps from the first's onwards, to s and
// checks that it answers as the transcript says; who names s for failures.
func replay(t *testing.T, info strategy.Info, c conformanceConfig, tr []step, s strategy.Strategy, from int, who string) {
	t.Helper()
	var out []strategy.Action
	for i, st := range tr {
		ev := st.ev
		ev.Values, ev.Second = slices.Clone(ev.Values), slices.Clone(ev.Second)
		out = s.Step(ev, out[:0])
		// Every field, now and later ones; the floats compare with ==,
		// the run having checked that they are numbers.
		if len(out) != len(st.acts) || (len(out) > 0 && !reflect.DeepEqual(out, st.acts)) {
			t.Fatalf("%s (%s): not deterministic: at step %d (%s) %s answers%s\nwhere the first answered%s",
				info.Name, describeConfig(c.cfg), from+i, eventString(st.ev), who, formatActions(out), formatActions(st.acts))
		}
	}
}

// PlainSGD reports whether the named strategy says it is plain mini-batch
// SGD on one device, and the options that make it so (nil: its defaults),
// for tests of engines that hold it to that.
func PlainSGD(name string) (options map[string]float64, ok bool) {
	want, ok := plainSGD[name]
	return cloneOptions(want.options), ok
}

// checkOneDevice asserts plain SGD on one device for the strategies of
// plainSGD.
func checkOneDevice(t *testing.T, info strategy.Info) {
	want, ok := plainSGD[info.Name]
	if !ok {
		t.Skipf("%s does not say it is plain SGD on one device (see plainSGD)", info.Name)
	}
	for i, b := range []struct {
		b  int
		lr float64
	}{{8, 0.1}, {20, 0.05}, {info.Defaults.Batch, info.Defaults.LR}} {
		c := conformanceConfig{name: "plain", seed: uint64(900 + i), budget: int64(500 * b.b),
			cfg: strategy.Config{Devices: 1, Batch: b.b, LR: b.lr, DatasetSize: 10 * b.b, Options: cloneOptions(want.options)}}
		tr := simulate(t, info, c)
		where := info.Name + " (" + describeConfig(c.cfg) + ")"
		sameLR := func(lr float64) bool { return math.Abs(lr-b.lr) <= 1e-12*b.lr }
		for k, st := range tr {
			for _, a := range st.acts {
				bad := ""
				switch a.Kind {
				case strategy.Dispatch:
					if a.Device != 0 || a.Batch != b.b || !sameLR(a.LR) || a.Mode != want.mode {
						bad = fmt.Sprintf("want device 0, batch %d, lr %g, mode %s", b.b, b.lr, [...]string{"step", "gradient", "pull"}[want.mode])
					}
				case strategy.AllReduce:
					if len(a.Weights) != 1 || a.Weights[0] != 1 || !sameLR(a.LR) {
						bad = fmt.Sprintf("want weights [1] and lr %g", b.lr)
					}
				case strategy.Collective:
					if a.Op != strategy.MergeOp || len(a.Weights) != 1 || a.Weights[0] != 1 || a.Params[0] != 0 {
						bad = "want only merges, with weights [1] and no momentum (strategy.IdentityMerge)"
					}
				case strategy.Commit:
					if a.Tau != 0 || (a.Op != "downpour" && a.Op != "staleness") || !sameLR(a.LR) {
						bad = fmt.Sprintf("want a downpour or staleness commit with tau 0 at lr %g", b.lr)
					}
				}
				if bad != "" {
					t.Fatalf("%s: one device should be plain SGD, but at step %d (%s) it does %s: %s", where, k, eventString(st.ev), Format(a), bad)
				}
			}
		}
	}
}

// checkMembership runs 4 devices with devices leaving the run (see
// "Devices leaving the run" in Conformance).
func checkMembership(t *testing.T, info strategy.Info) {
	plans := []struct {
		name   string
		leaves []leavePlan
	}{
		{"start", []leavePlan{{2, atStart, 0}}},
		{"busy", []leavePlan{{2, whileBusy, 50}}},
		{"idle", []leavePlan{{1, whileIdle, 50}}},
		{"last", []leavePlan{{2, whenLast, 50}}},
		{"collective", []leavePlan{{2, duringCollective, 50}}},
		{"device-0", []leavePlan{{0, whileBusy, 200}}},
		{"down-to-one", []leavePlan{{3, atStart, 0}, {1, whileBusy, 100}, {0, whenLast, 300}}},
	}
	batches := []struct {
		b  int
		lr float64
	}{{8, 0.1}, {info.Defaults.Batch, info.Defaults.LR}}
	for i, b := range batches {
		for j, p := range plans {
			budget := int64(1000*b.b + b.b/2 + 1)
			c := conformanceConfig{name: p.name, seed: uint64(500 + 10*i + j), budget: budget, negative: true, leaves: p.leaves,
				cfg: strategy.Config{Devices: 4, Batch: b.b, LR: b.lr, DatasetSize: int(budget / 40)}}
			t.Run(fmt.Sprintf("%s,batch=%d", p.name, b.b), func(t *testing.T) {
				tr := simulate(t, info, c)
				checkDeterminism(t, info, c, tr)
			})
		}
	}
}
