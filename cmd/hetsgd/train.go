package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/train"
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
	epochs, evalEvery                    float64
	evalPoints                           int
	seed                                 uint64
	threads                              int
	logPath                              string
	force                                bool
	progress                             string
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f trainFlags
	fs := newFlagSet("train", "train [flags]", stderr)
	fs.StringVar(&f.trainPath, "train", "", "training set `file` (XC or libSVM text, optionally gzipped)")
	fs.StringVar(&f.testPath, "test", "", "test set `file`")
	fs.StringVar(&f.dataDir, "data", "", "dataset `dir` holding train.txt and test.txt (or MNIST idx files); with no data flag, the bundled "+bundledDefault)
	fs.StringVar(&f.format, "format", "auto", "input format of --train/--test: xc, libsvm or auto")
	f.hidden.Set(defaultHidden)
	fs.Var(&f.hidden, "hidden", "hidden layer `widths`, comma-separated (\"none\" for a linear model)")
	fs.Float64Var(&f.dropout, "dropout", defaultDropout, "probability of dropping a hidden unit in training (0: off)")
	fs.IntVar(&f.batch, "batch", defaultBatch, "batch `size`")
	fs.Float64Var(&f.lr, "lr", defaultLR, "learning `rate`")
	fs.StringVar(&f.optimizer, "optimizer", defaultOptimizer, "local optimizer: "+strings.Join(optim.Names, ", "))
	fs.Float64Var(&f.momentum, "momentum", 0.9, "momentum coefficient (--optimizer momentum)")
	fs.Float64Var(&f.weightDecay, "weight-decay", 0, "L2 weight decay")
	fs.Float64Var(&f.epochs, "epochs", defaultEpochs, "passes over the training set (fractions allowed)")
	fs.Float64Var(&f.evalEvery, "eval-every", defaultEvalEvery, "`epochs` between evaluations on the test set")
	fs.IntVar(&f.evalPoints, "eval-points", 0, "score only the first `n` test points per evaluation (0: all)")
	fs.Uint64Var(&f.seed, "seed", defaultSeed, "`seed` of every random stream (initialisation, shuffling)")
	fs.IntVar(&f.threads, "threads", 0, "worker `threads` of the compute kernels (0: one per CPU)")
	fs.StringVar(&f.logPath, "log", "", "write the run log as JSON Lines to `file`")
	fs.BoolVar(&f.force, "force", false, "overwrite an existing --log file")
	fs.StringVar(&f.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on, off")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	format, err := data.ParseFormat(f.format)
	if err != nil {
		return err
	}
	optName := strings.ToLower(f.optimizer)
	cfg := train.Config{
		Hidden: f.hidden, Dropout: f.dropout, Batch: f.batch, LR: f.lr,
		Optimizer: optim.Config{Name: optName, Momentum: f.momentum, WeightDecay: f.weightDecay},
		Epochs:    f.epochs, EvalEvery: f.evalEvery, EvalPoints: f.evalPoints, Seed: f.seed,
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if _, err := optim.New(cfg.Optimizer, 0); err != nil {
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
	if err := log.Write(configRecord(f, source, trainSet, testSet, loadSeconds)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hetsgd train: %s — %d train / %d test points, %d features, %d labels; seed %d\n",
		source, trainSet.Len(), testSet.Len(), trainSet.Features(), trainSet.Labels(), f.seed)

	var obs train.Observer = &evalPrinter{w: stdout}
	if showProgress {
		obs = &multiObserver{obs, newProgressBar(stderr, f.epochs)}
	}
	start := time.Now()
	res, err := train.Run(ctx, cfg, trainSet, testSet, log, obs)
	if bar, ok := obs.(*multiObserver); ok {
		bar.finish()
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	done := doneRecord{Event: "done", Samples: res.Samples, TrainSeconds: res.TrainSeconds,
		WallSeconds: time.Since(start).Seconds(), Interrupted: interrupted}
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
// the data and the machine.
type configRecordT struct {
	Event        string  `json:"event"`
	Time         string  `json:"time"`
	Version      string  `json:"version"`
	Command      string  `json:"command"`
	Data         string  `json:"data"`
	Train        string  `json:"train,omitempty"`
	Test         string  `json:"test,omitempty"`
	TrainPoints  int     `json:"train_points"`
	TestPoints   int     `json:"test_points"`
	Features     int     `json:"features"`
	Labels       int     `json:"labels"`
	Hidden       []int   `json:"hidden"`
	Dropout      float64 `json:"dropout"`
	Batch        int     `json:"batch"`
	LR           float64 `json:"lr"`
	Optimizer    string  `json:"optimizer"`
	Momentum     float64 `json:"momentum"`
	WeightDecay  float64 `json:"weight_decay"`
	Epochs       float64 `json:"epochs"`
	EvalEvery    float64 `json:"eval_every"`
	EvalPoints   int     `json:"eval_points"`
	Seed         uint64  `json:"seed"`
	Threads      int     `json:"threads"`
	CPUs         int     `json:"cpus"`
	GoVersion    string  `json:"go_version"`
	LoadSeconds  float64 `json:"load_seconds"`
	TrainSecNote string  `json:"train_seconds_note"`
}

func configRecord(f trainFlags, source string, trainSet, testSet *data.Dataset, loadSeconds float64) configRecordT {
	hidden := append([]int{}, f.hidden...)
	return configRecordT{
		Event: "config", Time: time.Now().UTC().Format(time.RFC3339), Version: version, Command: "train",
		Data: source, Train: f.trainPath, Test: f.testPath,
		TrainPoints: trainSet.Len(), TestPoints: testSet.Len(), Features: trainSet.Features(), Labels: trainSet.Labels(),
		Hidden: hidden, Dropout: f.dropout, Batch: f.batch, LR: f.lr, Optimizer: strings.ToLower(f.optimizer), Momentum: f.momentum,
		WeightDecay: f.weightDecay, Epochs: f.epochs, EvalEvery: f.evalEvery, EvalPoints: f.evalPoints,
		Seed: f.seed, Threads: kernel.Default().Workers(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		LoadSeconds:  loadSeconds,
		TrainSecNote: "train_seconds counts training steps only (batch preparation, forward, backward, update); loading and evaluation are excluded",
	}
}

// doneRecord is the last record of a run log.
type doneRecord struct {
	Event              string  `json:"event"`
	BestP1             float64 `json:"best_p1"`
	BestP1TrainSeconds float64 `json:"best_p1_train_seconds"`
	BestP1Epoch        float64 `json:"best_p1_epoch"`
	TrainSeconds       float64 `json:"train_seconds"`
	WallSeconds        float64 `json:"wall_seconds"`
	Samples            int64   `json:"samples"`
	Interrupted        bool    `json:"interrupted"`
}

// evalPrinter prints one line per evaluation on stdout.
type evalPrinter struct{ w io.Writer }

func (p *evalPrinter) Step(float64, int64, float64, float64) {}

func (p *evalPrinter) Eval(r metric.EvalRecord) {
	fmt.Fprintf(p.w, "epoch %6.2f  train %7.2fs  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@5 %.4f  loss %.4f  train loss %.4f\n",
		r.Epoch, r.TrainSeconds, r.P1, r.P3, r.P5, r.NDCG5, r.Loss, r.TrainLoss)
}
