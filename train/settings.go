package train

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all" // a run may name every strategy
	"github.com/hetsgd/hetsgd/workload"
)

// Defaults of a run that are not a library's. They were chosen on the
// bundled Bibtex and on Delicious (see BENCHMARKS.md) and give a complete,
// fast first run. The optimizer, learning rate and batch size are the
// strategy's own (strategy.Info.Defaults); the network is
// workload.DefaultHidden with workload.DefaultDropout.
const (
	defaultEpochs    = 20
	defaultEvalEvery = 1
	defaultSeed      = 1
	// BundledDefault is the bundled data set a run with no data trains on.
	BundledDefault = "bibtex"
	// BundledPoints are its training points, for help texts.
	BundledPoints = 4880
)

// Settings are every setting of a training run, as hetsgd train takes
// them: what it trains on, the model, the strategy and its devices, the
// clock, how long it runs, and where its outputs go. Decls declares each;
// Register makes them flags.
type Settings struct {
	TrainPath, TestPath, DataDir, Format string
	Cache                                string
	Hidden                               IntList
	Dropout                              float64
	Output                               string
	LSH                                  workload.Sampling
	Batch                                int
	LR                                   float64
	Optimizer                            string
	Momentum, WeightDecay                float64
	Epochs, EvalEvery, TimeBudget        float64
	EvalPoints                           int
	Propensity                           metric.Propensity
	Seed                                 uint64
	Threads                              int
	Precision                            string
	Backend                              string
	Log                                  string
	Force                                bool
	Progress                             string
	Checkpoint, Resume                   string
	CheckpointEvery                      float64
	CheckpointKeep                       int
	KeepBest                             bool
	Patience                             int
	// resumedDevices are the devices of the run a resume continues (0:
	// none): they stay its devices, under mpirun or in one process.
	resumedDevices int
	// slideHashing: the slide strategy with no hashing flag given takes
	// SLIDE's hashing for the data set, known once the data is loaded
	// (workload.Sampling.SLIDEFor).
	slideHashing bool
	Config       string
	PrintConfig  bool
	Dashboard    string

	Strategy       string
	Devices        int
	DevicesPerRank int
	Speeds         FloatList
	Faults         FaultList
	Clock          string
	Noise          float64
	Cost           string
	Network        string
	NetLatency     float64
	NetBandwidth   float64
	InterLatency   float64
	InterBandwidth float64
	Topology       string
	Groups         int
	AllReduce      string
	Prep           float64
	Overlap        bool
	TimingOnly     bool
	Workload       string
	Dim            int
	LineSearch     bool
	StepRule       string
	Paper          bool
	// Options are every option of every strategy, by flag name
	// (STRATEGY.OPTION).
	Options map[string]*OptionFlag
}

// A Decl declares one setting of a run, once: its name (the flag, and its
// key in a config file and the run log), its help, its default, the
// Settings field it sets, and what the tool's parts do with it. Its range,
// where it is numeric, is engine.Ranges' (or workload.Ranges'), which the
// engine checks its Config against. The lists the parts need — what
// --print-config and the config record leave out, what a resume may change,
// the inputs saved by absolute path, the library field each error names —
// are read from the table (Decls).
type Decl struct {
	Name  string
	Usage string
	// Default is the setting's value when it is not given (nil: the
	// field's zero value).
	Default any
	// Field is the library field the setting sets, as errors name it
	// (package setting), "" when errors never name it.
	Field string
	// NotSetting: it says where outputs go, how they are shown, or how
	// this invocation behaves, not what the run is: --print-config leaves
	// it out and the config record does not hold it, so that a run
	// repeated from its settings writes the same log. A config file may
	// still give it.
	NotSetting bool
	// NotSaved: a checkpoint does not carry it over to a resumed run.
	NotSaved bool
	// MayChange: a resumed run may give it another value than the run it
	// continues — how long it runs, how often it evaluates and saves, where
	// it writes, how it shows progress, how many threads compute, on how
	// many devices, and where the data is when it moved (the data itself
	// must be the same).
	MayChange bool
	// Input: it names an input file, saved by absolute path so that a run
	// resumed from another folder finds it.
	Input bool
	// OmitUnset: left out of the settings when not given (empty means the
	// bundled data, the built-in models, equal speeds, no faults).
	OmitUnset bool

	value func(s *Settings) any // the field
	usage func() string         // Usage, when it is known only once every strategy has registered
}

// sampling is the sampled output layer's defaults, the --lsh-* flags'.
var sampling = workload.DefaultSampling()

// Decls declares every setting of a run but the strategies' options
// (STRATEGY.OPTION, declared by their strategies: strategy.Option).
var Decls = []Decl{
	{Name: "train", Input: true, OmitUnset: true, MayChange: true, value: func(s *Settings) any { return &s.TrainPath },
		Usage: "training set `file` (XC or libSVM text, optionally gzipped)"},
	{Name: "test", Input: true, OmitUnset: true, MayChange: true, value: func(s *Settings) any { return &s.TestPath },
		Usage: "test set `file`"},
	{Name: "data", Input: true, OmitUnset: true, MayChange: true, value: func(s *Settings) any { return &s.DataDir },
		Usage: "dataset `dir` holding train.txt and test.txt (or MNIST idx files); with no data flag, the bundled " + BundledDefault},
	{Name: "format", Field: "data.Loader.Format", MayChange: true, Default: "auto", value: func(s *Settings) any { return &s.Format },
		Usage: "input format of the data files: xc, libsvm (feature ids from 1), libsvm0 (from 0) or auto (xc or libsvm)"},
	{Name: "cache", MayChange: true, Default: "auto", value: func(s *Settings) any { return &s.Cache },
		Usage: "binary cache of text files of 8 MB or more: auto (use or write it; $HETSGD_CACHE or the user cache folder), refresh or off"},
	{Name: "hidden", Field: "model.Config.Hidden", Default: IntList(workload.DefaultHidden()), value: func(s *Settings) any { return &s.Hidden },
		Usage: "hidden layer `widths`, comma-separated (\"none\" for a linear model)"},
	{Name: "dropout", Field: "workload.NewXML.dropout", Default: workload.DefaultDropout, value: func(s *Settings) any { return &s.Dropout },
		Usage: "probability of dropping a hidden unit in training (0: off)"},
	{Name: "output", Default: "dense", value: func(s *Settings) any { return &s.Output },
		Usage: "output layer: dense (every label, every step) or lsh (SLIDE's: each point's labels, the labels its hash tables retrieve, and random labels its batch shares; evaluation stays exact; under the virtual clock its tables are built in line and its batches priced by what they compute)"},
	{Name: "lsh-hash", Field: "workload.Sampling.Hash", Default: sampling.Hash, value: func(s *Settings) any { return &s.LSH.Hash },
		Usage: "--output lsh: hash family, dwta (densified winner-take-all) or srp (signed random projections)"},
	{Name: "lsh-k", Field: "workload.Sampling.K", Default: sampling.K, value: func(s *Settings) any { return &s.LSH.K },
		Usage: "--output lsh: hash values per table (`K`; dwta: 3 bits each, srp: 1)"},
	{Name: "lsh-l", Field: "workload.Sampling.L", Default: sampling.L, value: func(s *Settings) any { return &s.LSH.L },
		Usage: "--output lsh: hash `tables`"},
	{Name: "lsh-capacity", Field: "workload.Sampling.Capacity", Default: sampling.Capacity, value: func(s *Settings) any { return &s.LSH.Capacity },
		Usage: "--output lsh: `rows` a bucket keeps (a random subset when more hash to it)"},
	{Name: "lsh-active", Field: "workload.Sampling.Active", Default: sampling.Active, value: func(s *Settings) any { return &s.LSH.Active },
		Usage: "--output lsh: `share` of the labels each point retrieves at most, and its batch shares at random"},
	{Name: "lsh-fill", Field: "workload.Sampling.Fill", Default: sampling.Fill, value: func(s *Settings) any { return &s.LSH.Fill },
		Usage: "--output lsh: random labels, batch (shared by a batch's points), labels (those and the batch's labels, shared: every other point's labels are a point's negatives) or point (each point's own, padding its set to --lsh-active, as SLIDE's code)"},
	{Name: "lsh-update", Field: "workload.Sampling.Update", Default: sampling.Update, value: func(s *Settings) any { return &s.LSH.Update },
		Usage: "--output lsh: lazy (update the rows a batch touches: in a device's own steps, and in an all-reduce of several devices' gradients the rows any of their batches touched; a centre's own update — a merge, an outer optimizer's step, a parameter server's commit — covers the whole vector, as the run log's update_note says) or dense (every weight after each batch, as SLIDE's code)"},
	{Name: "lsh-correct", Default: sampling.Correct, value: func(s *Settings) any { return &s.LSH.Correct },
		Usage: "--output lsh: the batch's shared labels stand for all the labels a point did not retrieve in its softmax's normalizer, each weighed by the inverse of its chance of being shared (the sampled softmax's correction; with --lsh-fill labels, that chance from the label's frequency in the training set)"},
	{Name: "lsh-rehash", Field: "workload.Sampling.Rehash", Default: sampling.Rehash, value: func(s *Settings) any { return &s.LSH.Rehash },
		Usage: "--output lsh: `samples` a device trains before rebuilding its tables from its weights (the first interval; in the background, each rebuild put in use when the next is due)"},
	{Name: "lsh-rebuild", Field: "workload.Sampling.Rebuild", Default: sampling.Rebuild, value: func(s *Settings) any { return &s.LSH.Rebuild },
		Usage: "--output lsh: `samples` between new draws of the hash functions (the first interval)"},
	{Name: "lsh-growth", Field: "workload.Sampling.Growth", Default: sampling.Growth, value: func(s *Settings) any { return &s.LSH.Growth },
		Usage: "--output lsh: both intervals grow by e^`λ` after each rebuild"},
	{Name: "batch", Field: "engine.Config.Batch", value: func(s *Settings) any { return &s.Batch },
		Usage: "batch `size` per device (b_max for adaptive); default: the strategy's"},
	{Name: "lr", Field: "engine.Config.LR", value: func(s *Settings) any { return &s.LR },
		Usage: "learning `rate` for --batch; default: the strategy's for its optimizer, scaled to --batch by that optimizer's rule"},
	{Name: "optimizer", Field: "engine.Config.Optimizer.Name", value: func(s *Settings) any { return &s.Optimizer },
		Usage: "local optimizer: " + strings.Join(optim.Names, ", ") + "; default: the strategy's"},
	{Name: "momentum", Field: "engine.Config.Optimizer.Momentum", value: func(s *Settings) any { return &s.Momentum },
		Usage: "momentum coefficient of --optimizer momentum (default 0.9)"},
	{Name: "weight-decay", Field: "engine.Config.Optimizer.WeightDecay", value: func(s *Settings) any { return &s.WeightDecay },
		Usage: "L2 weight decay"},
	{Name: "paper", Field: "engine.Config.Paper", value: func(s *Settings) any { return &s.Paper },
		Usage: "run the strategy at its paper's settings where its defaults differ (hetsgd strategies -v)"},
	{Name: "epochs", Field: "engine.Config.Epochs", MayChange: true, Default: defaultEpochs, value: func(s *Settings) any { return &s.Epochs },
		Usage: "stop after this many passes over the training set (0: no limit)"},
	{Name: "time-budget", Field: "engine.Config.TimeBudget", MayChange: true, value: func(s *Settings) any { return &s.TimeBudget },
		Usage: "stop after this many `seconds` of training, in the engine's clock (0: no limit)"},
	{Name: "eval-every", Field: "engine.Config.EvalEvery", MayChange: true, Default: defaultEvalEvery, value: func(s *Settings) any { return &s.EvalEvery },
		Usage: "`epochs` between evaluations on the test set (at the next synchronisation)"},
	{Name: "eval-points", MayChange: true, value: func(s *Settings) any { return &s.EvalPoints },
		Usage: "score only the first `n` test points per evaluation (0: all)"},
	{Name: "propensity", MayChange: true, Default: metric.DefaultPropensity, value: func(s *Settings) any { return &s.Propensity },
		Usage: "the label propensity model of the evaluations' PSP@k and PSnDCG@k (Jain et al., 2016; fitted to the training set's label counts): `A,B`, or the Extreme Classification Repository's values: xc (0.55,1.5, every set but these), amazon (0.6,2.6) or wikipedia (0.5,0.4)"},
	{Name: "seed", Field: "engine.Config.Seed", Default: uint64(defaultSeed), value: func(s *Settings) any { return &s.Seed },
		Usage: "`seed` of every random stream (initialisation, shuffling, dropout, cost noise)"},
	{Name: "threads", MayChange: true, value: func(s *Settings) any { return &s.Threads },
		Usage: "`threads` the run computes on: the kernels' workers and the Go runtime's processors, which a sampled layer's background table builds share (0: one per CPU)"},
	{Name: "precision", MayChange: true, Default: kernel.FP32, value: func(s *Settings) any { return &s.Precision },
		Usage: "precision of the matrix products (the dense layers', evaluation's, and with --output lsh the batch's shared rows'): fp32, or bf16 (operands rounded to bfloat16, float32 sums and float32 weights) on CPUs with AVX512-BF16, which stay fp32 elsewhere; the run log's kernel names the one that ran. A sampled layer's own rows stay fp32"},
	{Name: "backend", MayChange: true, Default: "cpu", value: func(s *Settings) any { return &s.Backend },
		Usage: "where the devices compute their gradients: cpu (the host's cores), or gpu (GPU 0 of NVIDIA's driver, every device a replica on it; a binary built with -tags cuda; the parameters stay the host's and cross to the GPU each step; not with --output lsh). A resume may change it"},
	{Name: "log", Field: "runlog.AppendLog.path", NotSetting: true, MayChange: true, value: func(s *Settings) any { return &s.Log },
		Usage: "write the run log as JSON Lines to `file`"},
	{Name: "force", NotSetting: true, NotSaved: true, MayChange: true, value: func(s *Settings) any { return &s.Force },
		Usage: "overwrite an existing --log file"},
	{Name: "progress", NotSetting: true, NotSaved: true, MayChange: true, Default: "auto", value: func(s *Settings) any { return &s.Progress },
		Usage: "progress bar on stderr: auto (when stderr is a terminal), on, off"},
	{Name: "checkpoint", Field: "engine.Config.Checkpoint", NotSetting: true, MayChange: true, value: func(s *Settings) any { return &s.Checkpoint },
		Usage: "save the run's state into `dir` every --checkpoint-every epochs and at the end, to continue it with --resume (a folder holds one run's checkpoints: one holding another run's, or in use, is refused before any work)"},
	{Name: "checkpoint-every", Field: "engine.Config.Checkpoint.Every", NotSetting: true, MayChange: true, Default: 1.0, value: func(s *Settings) any { return &s.CheckpointEvery },
		Usage: "`epochs` between checkpoints (0: only at the end)"},
	{Name: "checkpoint-keep", Field: "engine.Config.Checkpoint.Keep", NotSetting: true, MayChange: true, Default: engine.DefaultKeep, value: func(s *Settings) any { return &s.CheckpointKeep },
		Usage: "newest checkpoints to keep"},
	{Name: "keep-best", NotSetting: true, MayChange: true, Default: true, value: func(s *Settings) any { return &s.KeepBest },
		Usage: "with --checkpoint: keep the model of the best evaluation so far (P@1) in the folder's best.hck, for predict, eval and export --which best"},
	{Name: "patience", Field: "engine.Config.Patience", MayChange: true, value: func(s *Settings) any { return &s.Patience },
		Usage: "stop early after this many evaluations in a row without a better P@1 (0: never)"},
	{Name: "resume", Field: "engine.Config.Resume", NotSetting: true, NotSaved: true, MayChange: true, value: func(s *Settings) any { return &s.Resume },
		Usage: "continue the run saved in checkpoint `dir` (its newest checkpoint) or file, with its settings, its checkpoints going on in that folder; flags given change those that may change (--epochs, --time-budget, --eval-every, --patience, --log: a new file, else the run's log continues; --checkpoint: another folder, for a new run branching off)"},
	{Name: "strategy", Field: "engine.Config.Strategy", Default: "sync", value: func(s *Settings) any { return &s.Strategy },
		usage: func() string {
			return "parallel SGD `strategy`: " + strings.Join(strategyNames(), ", ") + " (hetsgd strategies)"
		}},
	{Name: "devices", Field: "engine.Config.Devices", MayChange: true, Default: 1, value: func(s *Settings) any { return &s.Devices },
		Usage: "number of devices (model replicas); under mpirun, ranks × --devices-per-rank"},
	{Name: "devices-per-rank", NotSetting: true, MayChange: true, Default: 1, value: func(s *Settings) any { return &s.DevicesPerRank },
		Usage: "under mpirun: devices each rank holds (a node of K devices)"},
	{Name: "speeds", Field: "engine.Config.Speeds", OmitUnset: true, MayChange: true, value: func(s *Settings) any { return &s.Speeds },
		Usage: "relative `speed` of each device, comma-separated (default all 1)"},
	{Name: "fault", Field: "engine.Config.Faults", OmitUnset: true, value: func(s *Settings) any { return &s.Faults },
		Usage: "inject a fault, a `spec` such as device=2,at=30s,kind=crash (kinds: crash; stall, given up after timeout=SECONDS, default 2s; slow=FACTOR); rank=R in place of device=N strikes a whole process of a job (under mpirun, or rank 0 alone); repeat the flag for more; seconds of the run's clock"},
	{Name: "time", Field: "engine.Config.Clock", Default: "real", value: func(s *Settings) any { return &s.Clock },
		Usage: "clock: real (goroutines, wall time) or virtual (deterministic simulation)"},
	{Name: "noise", Field: "engine.Config.Noise", Default: engine.DefaultNoise, value: func(s *Settings) any { return &s.Noise },
		Usage: "virtual clock: σ of the log-normal noise on each batch's cost"},
	{Name: "cost", Input: true, OmitUnset: true, value: func(s *Settings) any { return &s.Cost },
		Usage: "virtual clock: cost model `file` from hetsgd calibrate (default: the built-in one)"},
	{Name: "network", Input: true, OmitUnset: true, value: func(s *Settings) any { return &s.Network },
		Usage: "virtual clock: network model `file` from hetsgd calibrate --network (links within and between nodes; --topology, --groups and --allreduce still apply)"},
	{Name: "net-latency", Field: "engine.Config.Net.Intra.Latency", Default: comm.DefaultNetwork.Latency, value: func(s *Settings) any { return &s.NetLatency },
		Usage: "virtual clock: `seconds` per message between devices of a node"},
	{Name: "net-bandwidth", Field: "engine.Config.Net.Intra.Bandwidth", Default: comm.DefaultNetwork.Bandwidth, value: func(s *Settings) any { return &s.NetBandwidth },
		Usage: "virtual clock: `bytes` per second between devices of a node"},
	{Name: "inter-latency", Field: "engine.Config.Net.Inter.Latency", Default: comm.DefaultInter.Latency, value: func(s *Settings) any { return &s.InterLatency },
		Usage: "virtual clock: `seconds` per message between nodes (with --topology or --groups)"},
	{Name: "inter-bandwidth", Field: "engine.Config.Net.Inter.Bandwidth", Default: comm.DefaultInter.Bandwidth, value: func(s *Settings) any { return &s.InterBandwidth },
		Usage: "virtual clock: `bytes` per second between nodes"},
	{Name: "topology", NotSetting: true, value: func(s *Settings) any { return &s.Topology },
		Usage: "nodes × devices per node, e.g. 4x4 (sets --devices and --groups)"},
	{Name: "groups", value: func(s *Settings) any { return &s.Groups },
		Usage: "split the devices into this many nodes (groups) of equal size"},
	{Name: "allreduce", Default: "ring", value: func(s *Settings) any { return &s.AllReduce },
		Usage: "virtual clock: algorithm of plain all-reduces: ring, tree or hierarchical"},
	{Name: "prep", Field: "engine.Config.Prep", value: func(s *Settings) any { return &s.Prep },
		Usage: "data preparation `seconds` per sample (Layered SGD overlaps it): charged to the virtual clock; under the real clock, busy work that simulates decoding"},
	{Name: "overlap", Default: true, value: func(s *Settings) any { return &s.Overlap },
		Usage: "lsgd under the real clock with nodes: prepare the next batch while the nodes all-reduce (false: after, to measure what the overlap saves)"},
	{Name: "timing-only", Field: "engine.Config.TimingOnly", value: func(s *Settings) any { return &s.TimingOnly },
		Usage: "virtual clock: charge time but compute nothing (throughput studies)"},
	{Name: "workload", Default: "xml", value: func(s *Settings) any { return &s.Workload },
		Usage: "what to train: xml (the sparse MLP on --data) or regression (the AdaCons paper's linear regression)"},
	{Name: "dim", Default: 1000, value: func(s *Settings) any { return &s.Dim },
		Usage: "dimension of --workload regression"},
	{Name: "line-search", Field: "engine.Config.LineSearch", value: func(s *Settings) any { return &s.LineSearch },
		Usage: "use the optimal step of --workload regression (see --step-rule) instead of --lr"},
	{Name: "step-rule", Default: workload.RuleDistance, value: func(s *Settings) any { return &s.StepRule },
		Usage: "with --line-search: distance (the step closest to the optimum, as the AdaCons authors' code) or loss (exact line search of the loss)"},
	{Name: "config", NotSetting: true, NotSaved: true, value: func(s *Settings) any { return &s.Config },
		Usage: "read settings from `file` (YAML or JSON, keys named as these flags, a strategy's options under its name; or a run log, whose config record holds them); flags given override the file's"},
	{Name: "print-config", NotSetting: true, NotSaved: true, value: func(s *Settings) any { return &s.PrintConfig },
		Usage: "print the run's effective settings as a --config file and exit"},
	{Name: "dashboard", NotSetting: true, NotSaved: true, MayChange: true, value: func(s *Settings) any { return &s.Dashboard },
		Usage: "serve a live view of the run at `addr` (host:port, e.g. " + dashboard.DefaultAddr + "; port 0: any free one): its log's records charted as they are written; the page stays up after the run until Ctrl-C"},
}

// Register declares every setting as a flag of fs, with its default and
// help (its range added), and one flag per option of each strategy, named
// STRATEGY.OPTION (an option name means one thing: adaptive.beta is not
// adacons.beta). Only those given reach the strategy; the chosen
// strategy's alone may be given.
func (s *Settings) Register(fs *flag.FlagSet) {
	s.LSH.Background = true
	for _, d := range Decls {
		d.register(fs, s, d.Default)
	}
	s.Options = map[string]*OptionFlag{}
	for _, i := range strategy.List() {
		for _, o := range i.Options {
			v := &OptionFlag{}
			s.Options[i.Name+"."+o.Name] = v
			fs.Var(v, i.Name+"."+o.Name, i.Name+": "+o.Usage)
		}
	}
	DocumentRanges(fs, engine.Ranges)
}

// RegisterSome declares the settings names as flags of fs, setting s's
// fields, as Register does, each with its declaration's help and range;
// defaults gives some of them a default of their own (another command's,
// as tune's 4 devices on the virtual clock). An unknown name panics.
func (s *Settings) RegisterSome(fs *flag.FlagSet, defaults map[string]any, names ...string) {
	for _, name := range names {
		d, ok := DeclOf(name)
		if !ok {
			panic("train: no setting " + name)
		}
		def, ok := defaults[name]
		if !ok {
			def = d.Default
		}
		d.register(fs, s, def)
		if r, ok := d.Range(); ok {
			fs.Lookup(name).Usage += "; " + r.String()
		}
	}
}

// register declares d as a flag of fs, setting s's field, with default
// def (nil: the field's zero value).
func (d Decl) register(fs *flag.FlagSet, s *Settings, def any) {
	p := d.value(s)
	if def != nil {
		v := reflect.ValueOf(p).Elem()
		dv := reflect.ValueOf(def).Convert(v.Type())
		if dv.Kind() == reflect.Slice { // a copy: Set reuses its list
			dv = reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, dv.Len()), dv)
		}
		v.Set(dv)
	}
	usage := d.Usage
	if d.usage != nil {
		usage = d.usage()
	}
	switch p := p.(type) {
	case *string:
		fs.StringVar(p, d.Name, *p, usage)
	case *int:
		fs.IntVar(p, d.Name, *p, usage)
	case *float64:
		fs.Float64Var(p, d.Name, *p, usage)
	case *bool:
		fs.BoolVar(p, d.Name, *p, usage)
	case *uint64:
		fs.Uint64Var(p, d.Name, *p, usage)
	case flag.Value:
		fs.Var(p, d.Name, usage)
	default:
		panic(fmt.Sprintf("train: setting %s: a field of type %T", d.Name, p))
	}
}

func strategyNames() []string {
	var names []string
	for _, i := range strategy.List() {
		names = append(names, i.Name)
	}
	return names
}

// Range is the values the setting accepts, where it is numeric: stated
// once, in engine.Ranges (which holds workload.Ranges), by the setting's
// name, for the engine's Config.Validate to check the field against too.
func (d Decl) Range() (setting.Range, bool) {
	r, ok := engine.Ranges[d.Name]
	return r, ok
}

// DeclOf returns the declaration of the setting name; false for a
// strategy's option and an unknown name.
func DeclOf(name string) (Decl, bool) {
	i := slices.IndexFunc(Decls, func(d Decl) bool { return d.Name == name })
	if i < 0 {
		return Decl{}, false
	}
	return Decls[i], true
}

// declared returns the names of the declarations for which is holds.
func declared(is func(Decl) bool) []string {
	var out []string
	for _, d := range Decls {
		if is(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

var (
	notSettings    = declared(func(d Decl) bool { return d.NotSetting })
	mayChange      = declared(func(d Decl) bool { return d.MayChange })
	notSaved       = declared(func(d Decl) bool { return d.NotSaved })
	inputPathFlags = declared(func(d Decl) bool { return d.Input })
	omitUnset      = declared(func(d Decl) bool { return d.OmitUnset })
)

// Visited returns the flags given on fs.
func Visited(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// CheckRanges checks every numeric flag given on fs that has a range in
// ranges (engine.Ranges), value by value for lists, before any work. The
// defaults are in range (tested), so only given flags are checked.
func CheckRanges(fs *flag.FlagSet, ranges map[string]setting.Range) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		r, ok := ranges[f.Name]
		if !ok || err != nil {
			return
		}
		for _, s := range strings.Split(f.Value.String(), ",") {
			v, perr := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if perr != nil {
				continue // not a number ("none" for --hidden): the flag's own Set judged it
			}
			if err = r.Check("--"+f.Name, v); err != nil {
				return
			}
		}
	})
	return err
}

// DocumentRanges adds each ranged flag's accepted values to its help text.
func DocumentRanges(fs *flag.FlagSet, ranges map[string]setting.Range) {
	fs.VisitAll(func(f *flag.Flag) {
		if r, ok := ranges[f.Name]; ok {
			f.Usage += "; " + r.String()
		}
	})
}

// IntList is a flag holding comma-separated positive integers.
type IntList []int

func (l *IntList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *IntList) Set(v string) error {
	*l = (*l)[:0]
	if v == "" || v == "0" || v == "none" {
		return nil // a linear model
	}
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		*l = append(*l, n)
	}
	return nil
}

// FloatList is a flag holding comma-separated positive numbers.
type FloatList []float64

func (l *FloatList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (l *FloatList) Set(v string) error {
	*l = (*l)[:0]
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) {
			return fmt.Errorf("%q is not a positive number", f)
		}
		*l = append(*l, x)
	}
	return nil
}

// FaultList is the repeatable --fault flag.
type FaultList []engine.Fault

func (l *FaultList) String() string {
	s := make([]string, len(*l))
	for i, f := range *l {
		s[i] = f.String()
	}
	return strings.Join(s, " ")
}

func (l *FaultList) Set(v string) error {
	f, err := engine.ParseFault(v)
	if err != nil {
		// The flag package keeps the message only: named as flags now.
		return errors.New(Message(err, nil))
	}
	*l = append(*l, f)
	return nil
}

// OptionFlag is a strategy option's flag: it reaches the strategy only when
// given, and prints no default of its own (the strategy's is in the help).
type OptionFlag struct {
	v   float64
	set bool
}

func (o *OptionFlag) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *OptionFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return errors.New("not a number")
	}
	o.v, o.set = v, true
	return nil
}
