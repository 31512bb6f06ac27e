package strategy

import (
	"encoding"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hetsgd/hetsgd/setting"
)

// Strategy is a parallel SGD algorithm as a state machine. Step consumes one
// event and appends the actions it causes to out, returning the extended
// slice. It must be deterministic: the same events give the same actions.
//
// MarshalBinary snapshots the state its Steps changed, and UnmarshalBinary
// restores such a snapshot into a strategy New built from the same Config,
// which then answers the events that follow as the one saved would (see
// EncodeState). Checkpoints are made of them.
type Strategy interface {
	Step(ev Event, out []Action) []Action
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// EventKind says what happened.
type EventKind uint8

const (
	// Start begins the run; every device is idle and holds the initial model.
	Start EventKind = iota
	// BatchDone: Device finished the batch it was dispatched.
	BatchDone
	// CollectiveDone: the collective action last emitted (AllReduce or a
	// Collective) has completed; its devices are idle again.
	CollectiveDone
	// Answer answers a Query: Values[i] and Second[i] are the two values its
	// op measured on device i (see the op), NaN for a device that left;
	// Dim is the number of parameters of a replica.
	Answer
	// Leave: Device failed and left the run for good (a fault: a crash, or
	// a stall the engine gave up on). It is idle — a batch it was computing
	// is lost and never reported — and takes no more work. The strategy
	// stops waiting for it, dispatches nothing more to it and gives it
	// weight 0 in every collective (Members keeps the account); the engine
	// leaves it out of collectives (it never multiplies it by 0: its replica
	// may be stale) and of the mean gradient of Consensus, and answers NaN
	// for it in an Answer. No BatchDone of it ever follows. A
	// Leave may come before Start's dispatches are answered, and between a
	// collective or query and its answer (which then comes as issued). The
	// lost batch's samples count as dispatched towards the run's budget. One
	// device at least always remains. A strategy may emit actions in
	// answer: a collective it was waiting for only on the device that left.
	// Merge records show a departed device with batch, rate, updates and
	// weight 0.
	Leave
)

func (k EventKind) String() string {
	return [...]string{"start", "batch-done", "collective-done", "answer", "leave"}[k]
}

// Event is the input of a strategy.
type Event struct {
	Kind   EventKind
	Device int
	// Answer: the two values the query's op measured per device, and the
	// number of parameters of a replica.
	Values, Second []float64
	Dim            int
}

// ActionKind says what a strategy asks the engine to do.
type ActionKind uint8

const (
	// Dispatch gives Device the next Batch samples of the shared stream, to
	// process at learning rate LR in Mode. The device must be idle.
	Dispatch ActionKind = iota
	// AllReduce sums the gradients of all devices, device i weighted by
	// Weights[i] (which sum to 1 for an average; AdaCons's eq. 13 and
	// Adaptive SGD's perturbation need not), and applies the result on every
	// device with learning rate LR. All devices must be idle with a gradient
	// computed in Gradient mode.
	AllReduce
	// Collective runs Op (a Collector) on every rank with Weights and
	// Params: an algorithm's own step over the replicas and the centre
	// (Merge; CROSSBOW's synchronisation). All devices must be idle.
	Collective
	// Query runs Op (a Measurer) on every rank; the engine answers with an
	// Answer event before anything else happens. All devices must be idle.
	Query
	// Commit applies Device's update to the centre model (a parameter
	// server) by Op (a Committer), from the gradient it computed in Pull
	// mode on its copy of the centre. Other devices may be busy.
	Commit
)

func (k ActionKind) String() string {
	return [...]string{"dispatch", "all-reduce", "collective", "query", "commit"}[k]
}

// Mode says what a device does with a dispatched batch.
type Mode uint8

const (
	// LocalStep: compute the gradient and update the device's own replica
	// with its local optimizer.
	LocalStep Mode = iota
	// Gradient: compute the gradient only; an AllReduce applies it.
	Gradient
	// Pull: copy the centre model into the replica, then compute the
	// gradient there; a Commit applies it to the centre.
	Pull
)

// Action is the output of a strategy.
type Action struct {
	Kind    ActionKind
	Device  int       // Dispatch, Commit
	Batch   int       // Dispatch
	LR      float64   // Dispatch, AllReduce; an op's rate
	Mode    Mode      // Dispatch
	Weights []float64 // AllReduce, Collective: one per device; valid until the next Step
	// Layered asks for Layered SGD's all-reduce: reduce to each group's
	// communicator, all-reduce among communicators while the workers prepare
	// their next batch, broadcast back (AllReduce).
	Layered bool
	// Op names the registered op (RegisterOp) that carries out a
	// Collective, Query or Commit, and Params are its parameters, as the op
	// reads them.
	Op     string
	Params [MaxParams]float64
	// Tau: a Commit's staleness, the centre's updates since the device
	// pulled it.
	Tau int
	// Record, when set, is written to the run log as a "merge" event.
	Record *MergeRecord
	// Note, when set, is written to the run log as a "note" event.
	Note string
}

// MergeRecord describes one merge for the run log (the paper's Fig. 12): the
// batch size, learning rate and number of updates of every device during the
// mega-batch that ends, the weights used, and whether perturbation fired.
type MergeRecord struct {
	BatchSizes []int     `json:"batch_sizes"`
	LRs        []float64 `json:"lrs"`
	Updates    []int     `json:"updates"`
	Weights    []float64 `json:"weights"`
	Perturbed  bool      `json:"perturbed"`
	// Restarted: the centre's momentum was dropped at this merge (its step
	// went against it).
	Restarted bool `json:"restarted,omitempty"`
}

// Model says which model a strategy's accuracy is measured on.
type Model uint8

const (
	// Replica0 is device 0's replica (strategies whose replicas are always
	// identical at a barrier, such as gradient aggregation).
	Replica0 Model = iota
	// Center is the engine's centre model: the merged global model w̄ or
	// CROSSBOW's z.
	Center
)

// Config is what every strategy is built from. Options holds the
// strategy-specific settings by name (see Info.Options); New fills in the
// defaults of those absent, so a constructor finds every option it declares.
type Config struct {
	Devices     int     // number of devices, ≥ 1
	Batch       int     // batch size per device (b_max for adaptive)
	LR          float64 // learning rate for Batch
	DatasetSize int     // points in the training set (for epoch-based rules)
	Options     map[string]float64
}

// Settings are the common settings of a run that a strategy is best run
// with: its local optimizer and the learning rate that optimizer takes at the
// strategy's batch size. They are the defaults of "hetsgd train --strategy X"
// and of engine.Config fields left at zero.
type Settings struct {
	Optimizer string  // local optimizer, one of optim.Names
	LR        float64 // learning rate at Batch
	Batch     int     // batch size per device
	// Momentum and WeightDecay of the local optimizer; zero is the
	// optimizer's own default (0.9 for momentum) and no decay.
	Momentum, WeightDecay float64
	// Union says LR is for one device, and the rate grows with the number
	// of devices whose batches a synchronous step averages.
	Union bool
	// MaxLR is the largest rate of the default optimizer at which the grid
	// of BENCHMARKS.md §8 (4 devices; batches of 64, 128 and 256 a device;
	// Bibtex) trained the strategy to within 0.03 of the best P@1 of that
	// batch's row. A rate RateFor gives above it (more devices, larger
	// batches) was never validated, and a run that takes one says so
	// (0: no grid covers the strategy).
	MaxLR float64
}

// RateFor returns the learning rate s gives to batch b on n devices, with
// a formula that says how when it is not s.LR itself: the linear scaling
// rule (Goyal et al.: the rate grows with the batch), over the batch of a
// device and, when s.Union, over the union batch of all devices, which is
// what a synchronous step averages. For Adam the rule is a choice, not a
// law: it keeps the one-device rate 1e-3 at 128 that §1 of BENCHMARKS.md
// measured and gives 4e-3 on 4 devices, where the grid of §8 peaks between
// 3.16e-3 and 0.01.
func (s Settings) RateFor(b, n int) (float64, string) {
	lr := s.LR * float64(b) / float64(s.Batch)
	var f []string
	if s.Union && n != 1 {
		lr *= float64(n)
		f = append(f, "devices")
	}
	if b != s.Batch {
		f = append(f, fmt.Sprintf("batch/%d", s.Batch))
	}
	if len(f) == 0 {
		return lr, ""
	}
	return lr, strconv.FormatFloat(s.LR, 'g', -1, 64) + " × " + strings.Join(f, " × ")
}

// MegaBatch is the default number of batches between the merges of the
// model-averaging strategies (elastic, adaptive): the Adaptive SGD paper's
// 100, but at most half an epoch of the training set, so that the centre
// model is merged — and evaluated — at least twice per epoch on small data
// sets (BENCHMARKS.md §8: a merge every 2.6 epochs on Bibtex learns less in
// 10 epochs). size is the number of training points (0: unknown, 100).
func MegaBatch(size, batch int) float64 {
	if size <= 0 || batch <= 0 {
		return 100
	}
	return min(100, math.Ceil(float64(size)/float64(2*batch)))
}

// MegaBatchFormula describes MegaBatch in help texts.
const MegaBatchFormula = "min(100, ⌈N/(2·b)⌉), N training points"

// RoundSteps is the default number of local steps each device takes in a
// round of the local-step strategies (elastic's k, DiLoCo's and
// asynchronous Local-SGD's H): a mega-batch shared by the devices, so that
// they communicate as often as Adaptive SGD merges. It is an Option's
// Derive; RoundStepsFormula says it for help texts.
func RoundSteps(c Config, _ map[string]float64) float64 {
	return math.Ceil(MegaBatch(c.DatasetSize, c.Batch) / float64(c.Devices))
}

// RoundStepsFormula describes RoundSteps in help texts.
const RoundStepsFormula = "⌈min(100, ⌈N/(2·b)⌉)/devices⌉, N training points"

// RoundStepsOption declares a local-step strategy's steps between
// synchronisations (elastic's k, DiLoCo's and async-local's h): derived by
// RoundSteps unless given, at least 1.
func RoundStepsOption(name, paper, usage string) Option {
	return Option{Name: name, Derive: RoundSteps, Formula: RoundStepsFormula, Paper: paper, Range: setting.Count(1, setting.MaxCount), Usage: usage}
}

// OuterOptions declare an outer Nesterov optimizer's options (DiLoCo's
// outer step, async-local's server): outer-lr, default 0.7, and
// outer-momentum, default mu, with what the paper's value did (muPaper).
func OuterOptions(lrUsage string, mu float64, muPaper, muUsage string) []Option {
	return []Option{
		{Name: "outer-lr", Default: 0.7, Range: setting.Positive, Usage: lrUsage},
		{Name: "outer-momentum", Default: mu, Range: setting.Unit, Paper: muPaper, Usage: muUsage},
	}
}

// Preset is a complete set of values from a paper, for "--paper".
type Preset struct {
	Source   string             // the paper and where in it
	Settings Settings           // zero fields: the strategy's defaults
	Options  map[string]float64 // absent options: the strategy's defaults
}

// Option describes a strategy-specific setting.
type Option struct {
	Name    string  // flag name without dashes, e.g. "mega-batch"
	Default float64 // the value when absent, unless Derive is set
	// Derive computes a default that depends on the run: from the common
	// settings of cfg and the options declared before this one, already
	// resolved in opt. Formula says how, for help texts ("b_max/8").
	Derive  func(cfg Config, opt map[string]float64) float64
	Formula string
	// Paper, when set, says where the default departs from the paper and
	// what the paper's value is.
	Paper string
	Usage string
	// Range is the values the option accepts, checked by Resolve for given
	// and derived values alike; every option declares one. Constraints
	// between options (b_min ≤ b_max) stay with the constructor.
	Range setting.Range
}

// Info describes a registered strategy.
type Info struct {
	Name      string
	Summary   string // one line for "hetsgd strategies"
	Evaluates Model
	// Defaults are the settings the strategy is best run with: the single
	// place they are stated (BENCHMARKS.md records how they were chosen).
	Defaults Settings
	// Paper, when set, holds the paper's own values where the defaults
	// differ from them.
	Paper   *Preset
	Options []Option
	New     func(Config) (Strategy, error)
	// Check, when set, reports what New would refuse of a Config whose
	// options Resolve has filled in — the constraints between options —
	// without building anything, so that a front end validates a run's
	// settings before the data is loaded and the run builds its strategy
	// once. New may assume it passed.
	Check func(Config) error
	// MaxBatch returns the largest batch the strategy can dispatch, so that
	// devices size their buffers once; nil means Config.Batch. Its Config
	// holds every option.
	MaxBatch func(Config) int
	// Async marks strategies without barriers (parameter servers): the
	// engine evaluates between any two events rather than at collectives.
	Async bool
	// OwnUpdate marks strategies whose rule is the whole update (parameter
	// servers commit Δ = −lr·g by their rule): the local optimizer, its
	// momentum and weight decay do not apply.
	OwnUpdate bool
	// DeviceState marks strategies whose ops keep a model-sized vector
	// per device (Replica.State), which an engine counts when it sizes a
	// run's memory.
	DeviceState bool
	// Groups marks strategies that use the grouping of devices into nodes
	// (--groups, --topology) for more than the network's cost.
	Groups bool
	// Output, when set, is the output layer the strategy trains and no
	// other: "slide", the sampled layer as SLIDE's code runs it (each
	// point padded with its own random labels, every weight updated after
	// each batch).
	Output string
}

// SettingsFor returns the settings the strategy runs with by default: its
// Defaults, or with paper its paper's where the preset gives them.
func (info Info) SettingsFor(paper bool) Settings {
	if paper && info.Paper != nil && info.Paper.Settings.Optimizer != "" {
		return info.Paper.Settings
	}
	return info.Defaults
}

// MaxBatchOf returns the largest batch the strategy of info dispatches.
func (info Info) MaxBatchOf(cfg Config) int {
	if info.MaxBatch == nil {
		return cfg.Batch
	}
	opts, err := info.Resolve(cfg)
	if err != nil {
		return cfg.Batch
	}
	cfg.Options = opts
	return info.MaxBatch(cfg)
}

// Resolve returns every option of the strategy for cfg: the value cfg gives,
// else its default, derived ones computed in the order they are declared. It
// rejects an option the strategy does not take and a value outside the
// option's Range, naming the formula of a derived one.
func (info Info) Resolve(cfg Config) (map[string]float64, error) {
	for k := range cfg.Options {
		if !slices.ContainsFunc(info.Options, func(o Option) bool { return o.Name == k }) {
			return nil, fmt.Errorf("strategy: option %s does not apply to %s (%s)", k, info.Name, optionNames(info))
		}
	}
	out := make(map[string]float64, len(info.Options))
	for _, o := range info.Options {
		v, ok := cfg.Options[o.Name]
		switch {
		case ok:
		case o.Derive != nil:
			v = o.Derive(cfg, out)
		default:
			v = o.Default
		}
		name := info.Name + "." + o.Name // as a config file and the flags name it
		if err := o.Range.Check(name, v); err != nil {
			if !ok && o.Derive != nil {
				return nil, fmt.Errorf("strategy: %w (the default is %s for this run; give %s)", err, o.Formula, name)
			}
			return nil, fmt.Errorf("strategy: %w", err)
		}
		out[o.Name] = v
	}
	return out, nil
}

// Value is one effective setting of a strategy for a run, for help texts.
type Value struct {
	Name    string  // flag name without dashes
	Value   float64 // the value the run uses
	Formula string  // how a derived default is computed ("" for a number)
	Given   bool    // set by the caller, not a default
	Paper   string  // where the default departs from the paper
	Usage   string
	Range   setting.Range
}

// paperOption returns the paper's value of option name, where the
// strategy's paper preset gives one.
func (info Info) paperOption(name string) (float64, bool) {
	if info.Paper == nil {
		return 0, false
	}
	v, ok := info.Paper.Options[name]
	return v, ok
}

// Describe returns the effective value of every option of the strategy for
// cfg, in declaration order; an option whose value is its paper's says
// nothing of the paper.
func (info Info) Describe(cfg Config) ([]Value, error) {
	opts, err := info.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]Value, 0, len(info.Options))
	for _, o := range info.Options {
		_, given := cfg.Options[o.Name]
		v := Value{Name: o.Name, Value: opts[o.Name], Given: given, Paper: o.Paper, Usage: o.Usage, Range: o.Range}
		if p, ok := info.paperOption(o.Name); ok && p == v.Value {
			v.Paper = "" // the value is the paper's: nothing departs
		}
		if !given && o.Derive != nil {
			v.Formula = o.Formula
		}
		out = append(out, v)
	}
	return out, nil
}

// Opt returns option name of a Config that New resolved. Constructors read
// their options with it; an option the strategy did not declare is a bug.
func (c Config) Opt(name string) float64 {
	v, ok := c.Options[name]
	if !ok {
		panic("strategy: option " + name + " was not declared or not resolved")
	}
	return v
}

var (
	mu       sync.RWMutex
	registry = map[string]Info{}
)

// Register makes a strategy available by name. It panics when the name is
// taken or the info incomplete, as database/sql.Register does.
func Register(info Info) {
	mu.Lock()
	defer mu.Unlock()
	if info.Name == "" || info.New == nil {
		panic("strategy: Register with an empty name or no constructor")
	}
	if d := info.Defaults; d.Optimizer == "" || !(d.LR > 0) || d.Batch < 1 {
		panic("strategy: Register " + info.Name + " without its default optimizer, learning rate and batch")
	}
	for _, o := range info.Options {
		if math.IsNaN(o.Default) || (o.Derive != nil) != (o.Formula != "") {
			panic("strategy: Register " + info.Name + ": option " + o.Name + " needs a number, or Derive with its Formula")
		}
		if o.Range.IsZero() || o.Derive == nil && !o.Range.Contains(o.Default) {
			panic("strategy: Register " + info.Name + ": option " + o.Name + " needs a Range holding its default")
		}
	}
	if _, dup := registry[info.Name]; dup {
		panic("strategy: Register called twice for " + info.Name)
	}
	registry[info.Name] = info
}

// List returns the registered strategies sorted by name.
func List() []Info {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, i := range registry {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Lookup returns the info of a registered strategy.
func Lookup(name string) (Info, error) {
	mu.RLock()
	info, ok := registry[name]
	mu.RUnlock()
	if !ok {
		var names []string
		for _, i := range List() {
			names = append(names, i.Name)
		}
		return Info{}, fmt.Errorf("strategy: unknown strategy %q%s (have %s)", name, setting.Suggest(name, names, ""), strings.Join(names, ", "))
	}
	return info, nil
}

// Validate checks cfg for the named strategy without building it: common
// settings, every option given is one the strategy takes and in its range,
// and the constraints between them (Info.Check). It returns cfg with every
// option resolved.
func Validate(name string, cfg Config) (Info, Config, error) {
	info, err := Lookup(name)
	if err != nil {
		return Info{}, cfg, err
	}
	switch {
	case cfg.Devices < 1:
		return info, cfg, fmt.Errorf("strategy: devices %d: need at least 1", cfg.Devices)
	case cfg.Batch < 1:
		return info, cfg, fmt.Errorf("strategy: batch %d: need at least 1", cfg.Batch)
	case !(cfg.LR > 0) || math.IsInf(cfg.LR, 0):
		return info, cfg, fmt.Errorf("strategy: lr %v: need a positive learning rate", cfg.LR)
	}
	opts, err := info.Resolve(cfg)
	if err != nil {
		return info, cfg, err
	}
	cfg.Options = opts
	if info.Check != nil {
		if err := info.Check(cfg); err != nil {
			return info, cfg, err
		}
	}
	return info, cfg, nil
}

// builds counts the strategies New has built (Builds).
var builds atomic.Int64

// Builds returns how many strategies New has built in this process: a test
// that a run builds its strategy once reads it before and after.
func Builds() int64 { return builds.Load() }

// New builds the named strategy after checking cfg (Validate).
func New(name string, cfg Config) (Strategy, Info, error) {
	info, cfg, err := Validate(name, cfg)
	if err != nil {
		return nil, info, err
	}
	builds.Add(1)
	s, err := info.New(cfg)
	if err != nil {
		return nil, info, err
	}
	return s, info, nil
}

func optionNames(info Info) string {
	if len(info.Options) == 0 {
		return "it takes no options"
	}
	var s []string
	for _, o := range info.Options {
		s = append(s, o.Name)
	}
	return "it takes " + strings.Join(s, ", ")
}
