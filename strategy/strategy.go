package strategy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Strategy is a parallel SGD algorithm as a state machine. Step consumes one
// event and appends the actions it causes to out, returning the extended
// slice. It must be deterministic: the same events give the same actions.
type Strategy interface {
	Step(ev Event, out []Action) []Action
}

// EventKind says what happened.
type EventKind uint8

const (
	// Start begins the run; every device is idle and holds the initial model.
	Start EventKind = iota
	// BatchDone: Device finished the batch it was dispatched.
	BatchDone
	// CollectiveDone: the collective action last emitted (AllReduce, Merge,
	// CenterSync) has completed; its devices are idle again.
	CollectiveDone
	// Norms answers QueryNorms: Values[i] is ‖w_i‖₂ of device i's replica.
	Norms
	// Consensus answers QueryConsensus: Values[i] is ⟨g_i, ḡ⟩/‖g_i‖², with
	// ḡ the mean of the devices' gradients, and NaN where ‖g_i‖ = 0.
	Consensus
)

func (k EventKind) String() string {
	return [...]string{"start", "batch-done", "collective-done", "norms", "consensus"}[k]
}

// Event is the input of a strategy.
type Event struct {
	Kind   EventKind
	Device int
	Values []float64 // Norms: ‖w_i‖₂ per device
	Dim    int       // Norms: number of parameters of a replica
}

// ActionKind says what a strategy asks the engine to do.
type ActionKind uint8

const (
	// Dispatch gives Device the next Batch samples of the shared stream, to
	// process at learning rate LR in Mode. The device must be idle.
	Dispatch ActionKind = iota
	// AllReduce averages the gradients of all devices (device i weighted by
	// Weights[i], which sum to 1) and applies the result on every device with
	// learning rate LR. All devices must be idle with a gradient computed in
	// Gradient mode.
	AllReduce
	// Merge averages the replicas into the centre model, with momentum:
	//
	//	w̄' = Σ Weights[i]·w_i + Gamma·(w̄ − w̄_prev);  w̄_prev ← w̄;  w̄ ← w̄'
	//
	// and restarts every replica from w̄. All devices must be idle.
	Merge
	// CenterSync is CROSSBOW's synchronous model averaging step with
	// coefficient A and momentum Gamma:
	//
	//	d_i = w_i − z;  w_i ← w_i − A·d_i;  D = Σ A·d_i + Gamma·D_prev;  z ← z + D
	//
	// All devices must be idle.
	CenterSync
	// QueryNorms asks for the L2 norm of every replica; the engine answers
	// with a Norms event before anything else happens.
	QueryNorms
	// QueryConsensus asks for the AdaCons coefficients of the gradients the
	// devices computed in Gradient mode; the engine answers with a Consensus
	// event. It costs an all-reduce of the gradients and an all-gather of one
	// scalar per device.
	QueryConsensus
	// Commit applies Device's update to the centre model (a parameter
	// server), by Rule, from the gradient it computed in Pull mode on its
	// copy s of the centre:
	//
	//	Downpour:  θ ← θ + Δ,                 Δ = −LR·g
	//	Staleness: θ ← θ + Δ/(Tau+1)
	//	GEM:       m ← Mu·m + Δ;  π = clamp((Kappa·|m| − |θ − s|)/(|Δ| + Eps), 0, Clip);  θ ← θ + π⊙Δ
	//
	// per parameter, with m the device's own momentum. Other devices may be
	// busy.
	Commit
)

func (k ActionKind) String() string {
	return [...]string{"dispatch", "all-reduce", "merge", "center-sync", "query-norms", "query-consensus", "commit"}[k]
}

// Rule is how a Commit changes the centre model.
type Rule uint8

const (
	Downpour Rule = iota
	Staleness
	GEM
)

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
	Device  int       // Dispatch
	Batch   int       // Dispatch
	LR      float64   // Dispatch, AllReduce
	Mode    Mode      // Dispatch
	Weights []float64 // AllReduce, Merge: one per device; valid until the next Step
	Gamma   float64   // Merge, CenterSync: momentum
	A       float64   // CenterSync
	// Layered asks for Layered SGD's all-reduce: reduce to each group's
	// communicator, all-reduce among communicators while the workers prepare
	// their next batch, broadcast back (AllReduce).
	Layered bool
	// Commit's rule and its parameters.
	Rule                 Rule
	Tau                  int // Staleness: updates since the device pulled
	Mu, Kappa, Eps, Clip float64
	// Record, when set, is written to the run log as a "merge" event.
	Record *MergeRecord
	// Note, when set, is written to the run log as a "note" event.
	Note string
}

// IdentityMerge returns the merge of a single replica into the centre
// (weight 1, no momentum): the centre becomes the replica as it is. One-device
// runs of model-averaging strategies take it where n > 1 would merge, so that
// the engine's barriers and evaluation points stay where they are. Its
// Weights are shared and must not be written.
func IdentityMerge() Action { return Action{Kind: Merge, Weights: identityWeights} }

var identityWeights = []float64{1}

// MergeRecord describes one merge for the run log (the paper's Fig. 12): the
// batch size, learning rate and number of updates of every device during the
// mega-batch that ends, the weights used, and whether perturbation fired.
type MergeRecord struct {
	BatchSizes []int     `json:"batch_sizes"`
	LRs        []float64 `json:"lrs"`
	Updates    []int     `json:"updates"`
	Weights    []float64 `json:"weights"`
	Perturbed  bool      `json:"perturbed"`
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
// strategy-specific settings by name (see Info.Options); absent ones take
// their defaults.
type Config struct {
	Devices     int     // number of devices, ≥ 1
	Batch       int     // batch size per device (b_max for adaptive)
	LR          float64 // learning rate for Batch
	DatasetSize int     // points in the training set (for epoch-based rules)
	Options     map[string]float64
}

// Option describes a strategy-specific setting.
type Option struct {
	Name    string  // flag name without dashes, e.g. "mega-batch"
	Default float64 // NaN: derived from other settings, see Usage
	Usage   string
}

// Info describes a registered strategy.
type Info struct {
	Name      string
	Summary   string // one line for "hetsgd strategies"
	Evaluates Model
	Options   []Option
	New       func(Config) (Strategy, error)
	// MaxBatch returns the largest batch the strategy can dispatch, so that
	// devices size their buffers once; nil means Config.Batch.
	MaxBatch func(Config) int
	// Async marks strategies without barriers (parameter servers): the
	// engine evaluates between any two events rather than at collectives.
	Async bool
}

// MaxBatchOf returns the largest batch the strategy of info dispatches.
func (info Info) MaxBatchOf(cfg Config) int {
	if info.MaxBatch == nil {
		return cfg.Batch
	}
	return info.MaxBatch(cfg)
}

// Get returns option name of cfg, or def when absent.
func (c Config) Get(name string, def float64) float64 {
	if v, ok := c.Options[name]; ok {
		return v
	}
	return def
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
		return Info{}, fmt.Errorf("strategy: unknown strategy %q (have %s)", name, strings.Join(names, ", "))
	}
	return info, nil
}

// New builds the named strategy after checking cfg: common settings, and
// that every option given is one the strategy takes.
func New(name string, cfg Config) (Strategy, Info, error) {
	info, err := Lookup(name)
	if err != nil {
		return nil, Info{}, err
	}
	switch {
	case cfg.Devices < 1:
		return nil, info, fmt.Errorf("strategy: --devices %d: need at least 1", cfg.Devices)
	case cfg.Batch < 1:
		return nil, info, fmt.Errorf("strategy: --batch %d: need at least 1", cfg.Batch)
	case !(cfg.LR > 0) || math.IsInf(cfg.LR, 0):
		return nil, info, fmt.Errorf("strategy: --lr %v: need a positive learning rate", cfg.LR)
	}
	for k, v := range cfg.Options {
		if !slices.ContainsFunc(info.Options, func(o Option) bool { return o.Name == k }) {
			return nil, info, fmt.Errorf("strategy: --%s does not apply to %s (it takes %s)", k, name, optionNames(info))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, info, fmt.Errorf("strategy: --%s %v: need a finite number", k, v)
		}
	}
	s, err := info.New(cfg)
	if err != nil {
		return nil, info, err
	}
	return s, info, nil
}

func optionNames(info Info) string {
	if len(info.Options) == 0 {
		return "no options"
	}
	var s []string
	for _, o := range info.Options {
		s = append(s, "--"+o.Name)
	}
	return strings.Join(s, ", ")
}
