package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
)

// Defaults of "hetsgd train". They were chosen on the bundled Bibtex and on
// Delicious (see BENCHMARKS.md) and give a complete, fast first run.
const (
	defaultHidden    = "128"
	defaultDropout   = 0.2
	defaultBatch     = 128
	defaultLR        = 1e-3
	defaultOptimizer = "adam"
	defaultEpochs    = 20
	defaultEvalEvery = 1
	defaultSeed      = 1
	bundledDefault   = "bibtex"
)

// intList is a flag holding comma-separated positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
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

// floatList is a flag holding comma-separated positive numbers.
type floatList []float64

func (l *floatList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (l *floatList) Set(v string) error {
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

// trainFlags holds the settings of "hetsgd train"; the config record of the
// run log is built from it, so every flag is logged.
type trainFlags struct {
	trainPath, testPath, dataDir, format string
	hidden                               intList
	dropout                              float64
	batch                                int
	lr                                   float64
	optimizer                            string
	momentum, weightDecay                float64
	epochs, evalEvery, timeBudget        float64
	evalPoints                           int
	seed                                 uint64
	threads                              int
	logPath                              string
	force                                bool
	progress                             string

	strategy   string
	devices    int
	speeds     floatList
	clock      string
	noise      float64
	costPath   string
	netLatency float64
	netBW      float64
	options    map[string]*float64 // every strategy option, by flag name
}

func (f *trainFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.trainPath, "train", "", "training set `file` (XC or libSVM text, optionally gzipped)")
	fs.StringVar(&f.testPath, "test", "", "test set `file`")
	fs.StringVar(&f.dataDir, "data", "", "dataset `dir` holding train.txt and test.txt (or MNIST idx files); with no data flag, the bundled "+bundledDefault)
	fs.StringVar(&f.format, "format", "auto", "input format of --train/--test: xc, libsvm or auto")
	f.hidden.Set(defaultHidden)
	fs.Var(&f.hidden, "hidden", "hidden layer `widths`, comma-separated (\"none\" for a linear model)")
	fs.Float64Var(&f.dropout, "dropout", defaultDropout, "probability of dropping a hidden unit in training (0: off)")
	fs.IntVar(&f.batch, "batch", defaultBatch, "batch `size` per device (b_max for adaptive)")
	fs.Float64Var(&f.lr, "lr", defaultLR, "learning `rate` (for --batch)")
	fs.StringVar(&f.optimizer, "optimizer", defaultOptimizer, "local optimizer: "+strings.Join(optim.Names, ", "))
	fs.Float64Var(&f.momentum, "momentum", 0.9, "momentum coefficient (--optimizer momentum)")
	fs.Float64Var(&f.weightDecay, "weight-decay", 0, "L2 weight decay")
	fs.Float64Var(&f.epochs, "epochs", defaultEpochs, "stop after this many passes over the training set (0: no limit)")
	fs.Float64Var(&f.timeBudget, "time-budget", 0, "stop after this many `seconds` of training, in the engine's clock (0: no limit)")
	fs.Float64Var(&f.evalEvery, "eval-every", defaultEvalEvery, "`epochs` between evaluations on the test set (at the next synchronisation)")
	fs.IntVar(&f.evalPoints, "eval-points", 0, "score only the first `n` test points per evaluation (0: all)")
	fs.Uint64Var(&f.seed, "seed", defaultSeed, "`seed` of every random stream (initialisation, shuffling, dropout, cost noise)")
	fs.IntVar(&f.threads, "threads", 0, "worker `threads` of the compute kernels (0: one per CPU)")
	fs.StringVar(&f.logPath, "log", "", "write the run log as JSON Lines to `file`")
	fs.BoolVar(&f.force, "force", false, "overwrite an existing --log file")
	fs.StringVar(&f.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on, off")

	var names []string
	for _, i := range strategy.List() {
		names = append(names, i.Name)
	}
	fs.StringVar(&f.strategy, "strategy", "sync", "parallel SGD `strategy`: "+strings.Join(names, ", ")+" (hetsgd strategies)")
	fs.IntVar(&f.devices, "devices", 1, "number of devices (model replicas)")
	fs.Var(&f.speeds, "speeds", "relative `speed` of each device, comma-separated (default all 1)")
	fs.StringVar(&f.clock, "time", "real", "clock: real (goroutines, wall time) or virtual (deterministic simulation)")
	fs.Float64Var(&f.noise, "noise", 0.05, "virtual clock: σ of the log-normal noise on each batch's cost")
	fs.StringVar(&f.costPath, "cost", "", "virtual clock: cost model `file` from hetsgd calibrate (default: the built-in one)")
	fs.Float64Var(&f.netLatency, "net-latency", comm.DefaultNetwork.Latency, "virtual clock: `seconds` per message")
	fs.Float64Var(&f.netBW, "net-bandwidth", comm.DefaultNetwork.Bandwidth, "virtual clock: link `bytes` per second")

	// One flag per strategy option; only those set reach the strategy,
	// which rejects the ones it does not take.
	f.options = map[string]*float64{}
	usage := map[string][]string{}
	for _, i := range strategy.List() {
		for _, o := range i.Options {
			usage[o.Name] = append(usage[o.Name], i.Name+": "+o.Usage)
		}
	}
	keys := make([]string, 0, len(usage))
	for k := range usage {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f.options[k] = fs.Float64(k, math.NaN(), strings.Join(usage[k], "; "))
	}
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f trainFlags
	fs := newFlagSet("train", "train [flags]", stderr)
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := f.engineConfig(fs)
	if err != nil {
		return err
	}
	format, err := data.ParseFormat(f.format)
	if err != nil {
		return err
	}
	if f.threads < 0 {
		return fmt.Errorf("--threads %d: need 0 (one per CPU) or more", f.threads)
	}
	showProgress, err := progressWanted(f.progress, os.Stderr)
	if err != nil {
		return err
	}

	loadStart := time.Now()
	trainSet, testSet, source, err := loadData(f.trainPath, f.testPath, f.dataDir, format)
	if err != nil {
		return err
	}
	loadSeconds := time.Since(loadStart).Seconds()
	if f.threads > 0 {
		kernel.SetThreads(f.threads)
	}

	// The log is created only once every input is known to be good, so a
	// mistyped flag never leaves an empty or truncated log behind.
	var log *metric.Log
	if f.logPath != "" {
		if log, err = metric.CreateLog(f.logPath, f.force); err != nil {
			return err
		}
		defer log.Close()
	}
	if err := log.Write(configRecord(f, cfg, source, trainSet, testSet, loadSeconds)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hetsgd train: %s — %d train / %d test points, %d features, %d labels; %s on %d device(s), %s time; seed %d\n",
		source, trainSet.Len(), testSet.Len(), trainSet.Features(), trainSet.Labels(), cfg.Strategy, cfg.Devices, cfg.Clock, f.seed)

	var obs engine.Observer = &evalPrinter{w: stdout}
	var bar *multiObserver
	if showProgress {
		bar = &multiObserver{obs, newProgressBar(stderr, f.epochs)}
		obs = bar
	}
	start := time.Now()
	res, err := engine.Run(ctx, cfg, trainSet, testSet, log, obs)
	if bar != nil {
		bar.finish()
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	done := doneRecord{Event: "done", Samples: res.Samples, TrainSeconds: res.TrainSeconds, Interrupted: interrupted,
		Merges: len(res.Merges)}
	if cfg.Clock == engine.Real {
		done.WallSeconds = time.Since(start).Seconds()
	}
	best, ok := metric.Best(res.Evals)
	if ok {
		done.BestP1, done.BestP1TrainSeconds, done.BestP1Epoch = best.P1, best.TrainSeconds, best.Epoch
	}
	if err := log.Write(done); err != nil {
		return err
	}
	if ok {
		fmt.Fprintf(stdout, "best P@1 %.4f at %.2f train seconds (epoch %.2f)\n", best.P1, best.TrainSeconds, best.Epoch)
	} else {
		fmt.Fprintf(stdout, "no evaluation before the interruption (%.2f train seconds)\n", res.TrainSeconds)
	}
	if interrupted {
		return fmt.Errorf("interrupted after %d samples", res.Samples)
	}
	return nil
}

// engineConfig turns the flags into an engine configuration, checking what
// the engine does not.
func (f *trainFlags) engineConfig(fs *flag.FlagSet) (engine.Config, error) {
	cfg := engine.Config{
		Strategy: f.strategy, Devices: f.devices, Batch: f.batch, LR: f.lr,
		Hidden: f.hidden, Dropout: f.dropout,
		Optimizer: optim.Config{Name: strings.ToLower(f.optimizer), Momentum: f.momentum, WeightDecay: f.weightDecay},
		Clock:     engine.Clock(f.clock), Epochs: f.epochs, TimeBudget: f.timeBudget,
		EvalEvery: f.evalEvery, EvalPoints: f.evalPoints, Seed: f.seed,
		Noise: f.noise, Net: comm.Network{Latency: f.netLatency, Bandwidth: f.netBW},
	}
	if len(f.speeds) > 0 {
		cfg.Speeds = f.speeds
	}
	fs.Visit(func(fl *flag.Flag) {
		if v, ok := f.options[fl.Name]; ok {
			if cfg.Options == nil {
				cfg.Options = map[string]float64{}
			}
			cfg.Options[fl.Name] = *v
		}
	})
	if f.batch < 1 {
		return cfg, fmt.Errorf("--batch %d: need at least 1", f.batch)
	}
	if !(f.lr > 0) || math.IsInf(f.lr, 0) {
		return cfg, fmt.Errorf("--lr %v: need a positive finite learning rate", f.lr)
	}
	if _, err := optim.New(cfg.Optimizer, 0); err != nil {
		return cfg, err
	}
	if _, err := strategy.Lookup(cfg.Strategy); err != nil {
		return cfg, err
	}
	cfg.Cost = engine.DefaultCost()
	if f.costPath != "" {
		c, err := engine.LoadCost(f.costPath)
		if err != nil {
			return cfg, err
		}
		cfg.Cost = c
	}
	return cfg, cfg.Validate()
}

func loadData(trainPath, testPath, dir string, format data.Format) (trainSet, testSet *data.Dataset, source string, err error) {
	switch {
	case dir != "" && (trainPath != "" || testPath != ""):
		return nil, nil, "", errors.New("give either --data or --train/--test, not both")
	case dir != "":
		trainSet, testSet, err = data.LoadDir(dir)
		return trainSet, testSet, dir, err
	case trainPath != "" && testPath != "":
		trainSet, testSet, err = data.LoadPair(trainPath, testPath, format)
		return trainSet, testSet, trainPath, err
	case trainPath != "" || testPath != "":
		return nil, nil, "", errors.New("--train and --test go together (or use --data DIR)")
	}
	trainSet, testSet, err = data.Bundled(bundledDefault)
	return trainSet, testSet, "bundled " + bundledDefault, err
}

// configRecordT is the first record of a run log: every setting, the seed,
// the data and the machine. Under the virtual clock it holds nothing that
// depends on the wall clock, so that the log repeats byte for byte.
type configRecordT struct {
	Event        string             `json:"event"`
	Time         string             `json:"time,omitempty"`
	Version      string             `json:"version"`
	Command      string             `json:"command"`
	Data         string             `json:"data"`
	Train        string             `json:"train,omitempty"`
	Test         string             `json:"test,omitempty"`
	TrainPoints  int                `json:"train_points"`
	TestPoints   int                `json:"test_points"`
	Features     int                `json:"features"`
	Labels       int                `json:"labels"`
	Hidden       []int              `json:"hidden"`
	Dropout      float64            `json:"dropout"`
	Batch        int                `json:"batch"`
	LR           float64            `json:"lr"`
	Optimizer    string             `json:"optimizer"`
	Momentum     float64            `json:"momentum"`
	WeightDecay  float64            `json:"weight_decay"`
	Epochs       float64            `json:"epochs"`
	TimeBudget   float64            `json:"time_budget"`
	EvalEvery    float64            `json:"eval_every"`
	EvalPoints   int                `json:"eval_points"`
	Seed         uint64             `json:"seed"`
	Strategy     string             `json:"strategy"`
	Options      map[string]float64 `json:"options"`
	Devices      int                `json:"devices"`
	Speeds       []float64          `json:"speeds"`
	Clock        string             `json:"clock"`
	Noise        float64            `json:"noise,omitempty"`
	Cost         *engine.CostModel  `json:"cost,omitempty"`
	Network      *comm.Network      `json:"network,omitempty"`
	Threads      int                `json:"threads"`
	Kernel       string             `json:"kernel"`
	CPUs         int                `json:"cpus"`
	GoVersion    string             `json:"go_version"`
	LoadSeconds  float64            `json:"load_seconds,omitempty"`
	TrainSecNote string             `json:"train_seconds_note"`
}

func configRecord(f trainFlags, cfg engine.Config, source string, trainSet, testSet *data.Dataset, loadSeconds float64) configRecordT {
	speeds := cfg.Speeds
	if speeds == nil {
		speeds = make([]float64, cfg.Devices)
		for i := range speeds {
			speeds[i] = 1
		}
	}
	rec := configRecordT{
		Event: "config", Version: version, Command: "train",
		Data: source, Train: f.trainPath, Test: f.testPath,
		TrainPoints: trainSet.Len(), TestPoints: testSet.Len(), Features: trainSet.Features(), Labels: trainSet.Labels(),
		Hidden: append([]int{}, f.hidden...), Dropout: f.dropout, Batch: f.batch, LR: f.lr, Optimizer: cfg.Optimizer.Name,
		Momentum: f.momentum, WeightDecay: f.weightDecay, Epochs: f.epochs, TimeBudget: f.timeBudget,
		EvalEvery: f.evalEvery, EvalPoints: f.evalPoints, Seed: f.seed,
		Strategy: cfg.Strategy, Options: cfg.Options, Devices: cfg.Devices, Speeds: speeds, Clock: string(cfg.Clock),
		Threads: kernel.Default().Workers(), Kernel: kernel.Impl(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		TrainSecNote: "train_seconds counts training steps only (batch preparation, forward, backward, update, merges) in the engine's clock; loading and evaluation are excluded",
	}
	if rec.Options == nil {
		rec.Options = map[string]float64{}
	}
	if cfg.Clock == engine.Virtual {
		rec.Noise, rec.Cost, rec.Network = cfg.Noise, &cfg.Cost, &cfg.Net
	} else {
		rec.Time = time.Now().UTC().Format(time.RFC3339)
		rec.LoadSeconds = loadSeconds
	}
	return rec
}

// doneRecord is the last record of a run log.
type doneRecord struct {
	Event              string  `json:"event"`
	BestP1             float64 `json:"best_p1"`
	BestP1TrainSeconds float64 `json:"best_p1_train_seconds"`
	BestP1Epoch        float64 `json:"best_p1_epoch"`
	TrainSeconds       float64 `json:"train_seconds"`
	WallSeconds        float64 `json:"wall_seconds,omitempty"`
	Samples            int64   `json:"samples"`
	Merges             int     `json:"merges"`
	Interrupted        bool    `json:"interrupted"`
}

// evalPrinter prints one line per evaluation on stdout.
type evalPrinter struct{ w io.Writer }

func (p *evalPrinter) Step(float64, int64, float64, float64) {}

func (p *evalPrinter) Eval(r metric.EvalRecord) {
	fmt.Fprintf(p.w, "epoch %6.2f  train %7.2fs  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@5 %.4f  loss %.4f  train loss %.4f\n",
		r.Epoch, r.TrainSeconds, r.P1, r.P3, r.P5, r.NDCG5, r.Loss, r.TrainLoss)
}
