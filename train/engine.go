package train

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// CentreWhy says when a strategy that evaluates its centre model updates
// it, for the message of a run that ended before it did.
func CentreWhy(info strategy.Info) string {
	if info.Async {
		return "a parameter server's centre changes with its workers' commits"
	}
	return "it updates its centre model only when it merges or averages the replicas, once a mega-batch or a round"
}

// EngineConfig turns the flags into an engine configuration, checking what
// the engine does not.
func (f *Settings) EngineConfig(fs *flag.FlagSet, world comm.Comm, stderr io.Writer) (engine.Config, error) {
	set := Visited(fs)
	if n := f.resumedDevices; n != 0 {
		// A resumed run keeps its devices (unless given others): under
		// mpirun each rank holds an equal share of them, in one process all
		// of them.
		if n < 0 {
			n = -n * world.Size() // --devices-per-rank given anew
		}
		if n%world.Size() != 0 {
			return engine.Config{}, fmt.Errorf("--resume: the run has %d devices: resume it on a number of ranks that divides %d (each rank holds as many of them), in one process, or on other devices (--devices, a multiple of the ranks: the run goes on from its model)", n, n)
		}
		f.Devices, f.DevicesPerRank = n, n/world.Size()
		set["devices"] = true
	} else if set["devices-per-rank"] || world.Size() > 1 {
		n := world.Size() * f.DevicesPerRank
		if set["devices"] && f.Devices != n {
			return engine.Config{}, fmt.Errorf("--devices %d: %d ranks of --devices-per-rank %d hold %d devices (leave --devices out)", f.Devices, world.Size(), f.DevicesPerRank, n)
		}
		f.Devices = n
		set["devices"] = true
	}
	if f.Topology != "" {
		nodes, per, ok := parseTopology(f.Topology)
		if !ok {
			return engine.Config{}, fmt.Errorf("--topology %q: want NODESxDEVICES, e.g. 4x4", f.Topology)
		}
		if set["devices"] && f.Devices != nodes*per || set["groups"] && f.Groups != nodes {
			return engine.Config{}, fmt.Errorf("--topology %s disagrees with --devices %d / --groups %d", f.Topology, f.Devices, f.Groups)
		}
		f.Devices, f.Groups = nodes*per, nodes
	}
	alg, err := comm.ParseAlgorithm(f.AllReduce)
	if err != nil {
		return engine.Config{}, err
	}
	net := comm.Model{Intra: comm.Network{Latency: f.NetLatency, Bandwidth: f.NetBandwidth}, AllReduce: alg}
	net.Inter = net.Intra
	if f.Network != "" {
		if f.Clock != string(engine.Virtual) {
			return engine.Config{}, fmt.Errorf("--network describes the links for --time virtual; under the real clock the links are the ones the run uses")
		}
		m, err := LoadNetwork(f.Network)
		if err != nil {
			return engine.Config{}, err
		}
		if set["allreduce"] {
			m.AllReduce = alg
		}
		if f.Groups > 0 {
			m.GroupSize = 0 // from --groups below
		}
		net = m
	}
	if f.Groups > 0 {
		if f.Groups > f.Devices || f.Devices%f.Groups != 0 {
			return engine.Config{}, fmt.Errorf("--groups %d: need a divisor of --devices %d", f.Groups, f.Devices)
		}
		net.GroupSize = f.Devices / f.Groups
		if f.Network == "" {
			net.Inter = comm.Network{Latency: f.InterLatency, Bandwidth: f.InterBandwidth}
		}
	}
	cfg := engine.Config{
		Strategy: f.Strategy, Devices: f.Devices, Batch: f.Batch, LR: f.LR,
		Optimizer: optim.Config{Name: strings.ToLower(f.Optimizer), Momentum: f.Momentum, WeightDecay: f.WeightDecay},
		Clock:     engine.Clock(f.Clock), Epochs: f.Epochs, TimeBudget: f.TimeBudget,
		EvalEvery: f.EvalEvery, Seed: f.Seed, LineSearch: f.LineSearch,
		Noise: f.Noise, Net: net, Prep: f.Prep, NoOverlap: !f.Overlap, TimingOnly: f.TimingOnly, World: world,
	}
	if len(f.Speeds) > 0 {
		cfg.Speeds = f.Speeds
	}
	for _, x := range f.Faults {
		if x.OnRank {
			cfg.RankFaults = append(cfg.RankFaults, x)
		} else {
			cfg.Faults = append(cfg.Faults, x)
		}
	}
	if f.Checkpoint != "" {
		cfg.Checkpoint = engine.Checkpointing{Dir: f.Checkpoint, Every: f.CheckpointEvery, Keep: f.CheckpointKeep, KeepBest: f.KeepBest}
	}
	cfg.Patience = f.Patience
	cfg.Options = f.GivenOptions(f.Strategy)
	cfg.Paper = f.Paper
	info, err := strategy.Lookup(cfg.Strategy)
	if err != nil {
		return cfg, err
	}
	if err := f.checkOptions(info.Name); err != nil {
		return cfg, err
	}
	optimizer := cfg.Optimizer.Name // the run's: given, else the strategy's
	if optimizer == "" {
		optimizer = info.SettingsFor(cfg.Paper).Optimizer
	}
	if err := checkApplies(info, optimizer, set, f, world.Size(), stderr, world.Rank() == 0); err != nil {
		return cfg, err
	}
	if cfg, err = cfg.WithDefaults(); err != nil {
		return cfg, err
	}
	if _, err := optim.New(cfg.Optimizer, 0); err != nil {
		return cfg, err
	}
	cfg.Cost = cost.Default()
	if f.Cost != "" {
		c, err := cost.Load(f.Cost)
		if err != nil {
			return cfg, err
		}
		cfg.Cost = c
	}
	return cfg, cfg.Validate()
}

// GivenOptions returns the options of strategy name given as flags (or in a
// config file), by their names without the strategy's.
func (f *Settings) GivenOptions(name string) map[string]float64 {
	var m map[string]float64
	for k, o := range f.Options {
		opt, ok := strings.CutPrefix(k, name+".")
		if o.set && ok {
			if m == nil {
				m = map[string]float64{}
			}
			m[opt] = o.v
		}
	}
	return m
}

// checkOptions rejects an option of a strategy other than the run's.
func (f *Settings) checkOptions(name string) error {
	var other []string
	for k, o := range f.Options {
		if o.set && !strings.HasPrefix(k, name+".") {
			other = append(other, "--"+k)
		}
	}
	if len(other) == 0 {
		return nil
	}
	slices.Sort(other)
	return fmt.Errorf("%s: another strategy's option; this run's strategy is %s (its options are --%s.NAME: hetsgd train --strategy %s --help)",
		strings.Join(other, ", "), name, name, name)
}

// inapplicable lists the flags that do nothing for a run of strategy info
// with optimizer (the effective one) and f's clock, nodes and workload: why,
// and whether giving one is an error (where a user would expect it to
// change the run) or a warning (harmlessly ignored). checkApplies judges the
// flags given by it, and --print-config leaves these flags out. (An option
// of another strategy is checkOptions' error.)
func inapplicable(info strategy.Info, optimizer string, f *Settings, ranks int) map[string]notApplying {
	out := map[string]notApplying{}
	add := func(fatal bool, why string, flags ...string) {
		for _, fl := range flags {
			out[fl] = notApplying{why, fatal}
		}
	}
	if info.OwnUpdate {
		add(true, "does not apply to "+info.Name+": a parameter server commits Δ = −lr·g by its rule, no local optimizer runs", "momentum", "weight-decay")
	} else if optimizer != "momentum" {
		add(true, fmt.Sprintf("does nothing with %s's optimizer %s (give --optimizer momentum)", info.Name, optimizer), "momentum")
	}
	realClock := f.Clock == string(engine.Real)
	if realClock && !info.Groups {
		add(true, "does nothing for "+info.Name+" under the real clock: nodes shape the virtual clock's network, and Layered SGD's (lsgd) layers", "groups", "topology")
	}
	if !info.Groups || !realClock || (ranks == 1 && f.Groups == 0 && f.Topology == "") {
		add(false, "applies to lsgd under the real clock with nodes (--groups, --topology or mpirun) only; ignored", "overlap")
	}
	if realClock {
		add(false, "describes the virtual clock; ignored under --time real", "noise", "cost", "net-latency", "net-bandwidth", "inter-latency", "inter-bandwidth", "allreduce")
	} else if f.Network != "" {
		add(true, "and --network both describe the links: give one of them", "net-latency", "net-bandwidth", "inter-latency", "inter-bandwidth")
	}
	if f.Workload == "regression" {
		add(false, "applies to --workload xml only; ignored", "hidden", "dropout", "data", "train", "test", "format", "cache", "eval-points", "propensity")
	}
	if f.Output != "lsh" || f.Workload == "regression" {
		add(true, "applies with --output lsh only", "lsh-hash", "lsh-k", "lsh-l", "lsh-capacity", "lsh-active", "lsh-fill", "lsh-update", "lsh-correct", "lsh-rehash", "lsh-rebuild", "lsh-growth")
	}
	if f.Workload == "regression" {
		add(true, "applies to --workload xml only", "output", "backend")
	}
	if f.Workload != "regression" {
		add(true, "applies to --workload regression only", "dim", "step-rule", "line-search")
	} else if !f.LineSearch {
		add(false, "applies with --line-search only; ignored", "step-rule")
	}
	return out
}

// StrategyOutput gives a strategy that trains one output layer only
// (strategy.Info.Output) that layer: slide gets --output lsh in
// workload.Sampling.SLIDE's mode (--lsh-fill point, --lsh-update dense,
// --lsh-correct=false), as SLIDE's code trains. A flag given against it is
// an error. With none of --lsh-hash, --lsh-k, --lsh-l and --lsh-capacity
// given, slide takes SLIDE's hashing for the data set once it is loaded
// (workload.Sampling.SLIDEFor).
func (f *Settings) StrategyOutput(fs *flag.FlagSet) error {
	info, err := strategy.Lookup(f.Strategy)
	if err != nil || info.Output != "slide" {
		return nil // an unknown strategy is the engine's error
	}
	if f.Workload != "xml" {
		return fmt.Errorf("--workload %s: %s trains the sparse MLP (--workload xml)", f.Workload, f.Strategy)
	}
	given := Visited(fs)
	m := workload.DefaultSampling().SLIDE()
	for _, s := range []struct{ flag, want string }{{"output", "lsh"}, {"lsh-fill", m.Fill}, {"lsh-update", m.Update}, {"lsh-correct", strconv.FormatBool(m.Correct)}} {
		if fl := fs.Lookup(s.flag); given[s.flag] && fl.Value.String() != s.want {
			return fmt.Errorf("--%s %s: %s trains the sampled output layer as SLIDE's code does (--%s %s)", s.flag, fl.Value, f.Strategy, s.flag, s.want)
		}
		if err := fs.Set(s.flag, s.want); err != nil {
			return err
		}
	}
	f.slideHashing = !slices.ContainsFunc(slideHashFlags, func(n string) bool { return given[n] })
	return nil
}

// slideHashFlags are the hashing settings slide derives from the data set
// when none of them is given.
var slideHashFlags = []string{"lsh-hash", "lsh-k", "lsh-l", "lsh-capacity"}

// notApplying is why a flag does nothing for a run.
type notApplying struct {
	why   string
	fatal bool
}

// checkApplies rejects a given flag that would do nothing for the run where
// a user would expect it to change the run, and warns about one that is
// harmlessly ignored.
func checkApplies(info strategy.Info, optimizer string, set map[string]bool, f *Settings, ranks int, stderr io.Writer, root bool) error {
	bad := inapplicable(info, optimizer, f, ranks)
	names := slices.Sorted(maps.Keys(set))
	for _, fl := range names {
		if n, ok := bad[fl]; ok && n.fatal {
			return fmt.Errorf("--%s %s", fl, n.why)
		}
	}
	for _, fl := range names {
		if n, ok := bad[fl]; ok && root {
			fmt.Fprintf(stderr, "hetsgd train: warning: --%s %s\n", fl, n.why)
		}
	}
	return nil
}

// LoadNetwork reads a network model written by calibrate --network.
func LoadNetwork(path string) (comm.Model, error) {
	b, err := bounded.ReadFile(path, 1<<20, "a network model (hetsgd calibrate --network writes one)")
	if err != nil {
		return comm.Model{}, fmt.Errorf("--network: %w", err)
	}
	var m comm.Model
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return comm.Model{}, fmt.Errorf("--network %s: %v (want the JSON hetsgd calibrate --network writes)", path, err)
	}
	if err := m.Validate(); err != nil {
		return comm.Model{}, fmt.Errorf("--network %s: %w", path, err)
	}
	return m, nil
}

func parseTopology(s string) (nodes, per int, ok bool) {
	a, b, found := strings.Cut(strings.ToLower(s), "x")
	n, err1 := strconv.Atoi(a)
	p, err2 := strconv.Atoi(b)
	return n, p, found && err1 == nil && err2 == nil && n >= 1 && p >= 1
}
