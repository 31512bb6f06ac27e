package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// Defaults of "hetsgd train". They were chosen on the bundled Bibtex and on
// Delicious (see BENCHMARKS.md) and give a complete, fast first run. The
// optimizer, learning rate and batch size are the strategy's own
// (strategy.Info.Defaults); the network is workload.DefaultHidden with
// workload.DefaultDropout.
const (
	defaultEpochs    = 20
	defaultEvalEvery = 1
	defaultSeed      = 1
	bundledDefault   = "bibtex"
	bundledPoints    = 4880 // training points of the bundled default, for help texts
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

// faultList is the repeatable --fault flag.
type faultList []engine.Fault

func (l *faultList) String() string {
	s := make([]string, len(*l))
	for i, f := range *l {
		s[i] = f.String()
	}
	return strings.Join(s, " ")
}

func (l *faultList) Set(v string) error {
	f, err := engine.ParseFault(v)
	if err != nil {
		// The flag package keeps the message only: named as flags now.
		return errors.New(message(err))
	}
	*l = append(*l, f)
	return nil
}

// optionFlag is a strategy option's flag: it reaches the strategy only when
// given, and prints no default of its own (the strategy's is in the help).
type optionFlag struct {
	v   float64
	set bool
}

func (o *optionFlag) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optionFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return errors.New("not a number")
	}
	o.v, o.set = v, true
	return nil
}

// trainFlags holds the settings of "hetsgd train"; the config record of the
// run log is built from it, so every flag is logged.
type trainFlags struct {
	trainPath, testPath, dataDir, format string
	cache                                string
	hidden                               intList
	dropout                              float64
	output                               string
	lsh                                  workload.Sampling
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
	checkpoint, resume                   string
	checkpointEvery                      float64
	checkpointKeep                       int
	keepBest                             bool
	patience                             int
	// resumedDevices are the devices of the run a resume continues (0:
	// none): they stay its devices, under mpirun or in one process.
	resumedDevices int
	configPath     string
	printConfig    bool
	dashboard      string

	strategy       string
	devices        int
	devicesPerRank int
	speeds         floatList
	faults         faultList
	clock          string
	noise          float64
	costPath       string
	networkPath    string
	netLatency     float64
	netBW          float64
	interLatency   float64
	interBW        float64
	topology       string
	groups         int
	allReduce      string
	prep           float64
	overlap        bool
	timingOnly     bool
	workload       string
	dim            int
	lineSearch     bool
	stepRule       string
	paper          bool
	options        map[string]*optionFlag // every option of every strategy, by flag name (STRATEGY.OPTION)
}

func (f *trainFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.trainPath, "train", "", "training set `file` (XC or libSVM text, optionally gzipped)")
	fs.StringVar(&f.testPath, "test", "", "test set `file`")
	fs.StringVar(&f.dataDir, "data", "", "dataset `dir` holding train.txt and test.txt (or MNIST idx files); with no data flag, the bundled "+bundledDefault)
	fs.StringVar(&f.format, "format", "auto", "input format of --train/--test: xc, libsvm or auto")
	fs.StringVar(&f.cache, "cache", "auto", "binary cache of text files of 8 MB or more: auto (use or write it; $HETSGD_CACHE or the user cache folder), refresh or off")
	f.hidden = workload.DefaultHidden()
	fs.Var(&f.hidden, "hidden", "hidden layer `widths`, comma-separated (\"none\" for a linear model)")
	fs.Float64Var(&f.dropout, "dropout", workload.DefaultDropout, "probability of dropping a hidden unit in training (0: off)")
	fs.StringVar(&f.output, "output", "dense", "output layer: dense (every label, every step) or lsh (SLIDE's: each point's labels, the labels its hash tables retrieve, and random labels its batch shares; real clock only; evaluation stays exact)")
	d := workload.DefaultSampling()
	f.lsh.Background = true
	fs.StringVar(&f.lsh.Hash, "lsh-hash", d.Hash, "--output lsh: hash family, dwta (densified winner-take-all) or srp (signed random projections)")
	fs.IntVar(&f.lsh.K, "lsh-k", d.K, "--output lsh: hash values per table (`K`; dwta: 3 bits each, srp: 1)")
	fs.IntVar(&f.lsh.L, "lsh-l", d.L, "--output lsh: hash `tables`")
	fs.IntVar(&f.lsh.Capacity, "lsh-capacity", d.Capacity, "--output lsh: `rows` a bucket keeps (a random subset when more hash to it)")
	fs.Float64Var(&f.lsh.Active, "lsh-active", d.Active, "--output lsh: `share` of the labels each point retrieves at most, and its batch shares at random")
	fs.StringVar(&f.lsh.Fill, "lsh-fill", d.Fill, "--output lsh: random labels, batch (shared by a batch's points), labels (those and the batch's labels, shared: every other point's labels are a point's negatives) or point (each point's own, padding its set to --lsh-active, as SLIDE's code)")
	fs.StringVar(&f.lsh.Update, "lsh-update", d.Update, "--output lsh: lazy (update the rows a batch touches) or dense (every weight after each batch, as SLIDE's code)")
	fs.BoolVar(&f.lsh.Correct, "lsh-correct", d.Correct, "--output lsh: the batch's shared labels stand for all the labels a point did not retrieve in its softmax's normalizer, each weighed by the inverse of its chance of being shared (the sampled softmax's correction; with --lsh-fill labels, that chance from the label's frequency in the training set)")
	fs.IntVar(&f.lsh.Rehash, "lsh-rehash", d.Rehash, "--output lsh: `samples` a device trains before rebuilding its tables from its weights (the first interval; in the background)")
	fs.IntVar(&f.lsh.Rebuild, "lsh-rebuild", d.Rebuild, "--output lsh: `samples` between new draws of the hash functions (the first interval)")
	fs.Float64Var(&f.lsh.Growth, "lsh-growth", d.Growth, "--output lsh: both intervals grow by e^`λ` after each rebuild")
	fs.IntVar(&f.batch, "batch", 0, "batch `size` per device (b_max for adaptive); default: the strategy's")
	fs.Float64Var(&f.lr, "lr", 0, "learning `rate` for --batch; default: the strategy's for its optimizer, scaled to --batch by that optimizer's rule")
	fs.StringVar(&f.optimizer, "optimizer", "", "local optimizer: "+strings.Join(optim.Names, ", ")+"; default: the strategy's")
	fs.Float64Var(&f.momentum, "momentum", 0, "momentum coefficient of --optimizer momentum (default 0.9)")
	fs.Float64Var(&f.weightDecay, "weight-decay", 0, "L2 weight decay")
	fs.BoolVar(&f.paper, "paper", false, "run the strategy at its paper's settings where its defaults differ (hetsgd strategies -v)")
	fs.Float64Var(&f.epochs, "epochs", defaultEpochs, "stop after this many passes over the training set (0: no limit)")
	fs.Float64Var(&f.timeBudget, "time-budget", 0, "stop after this many `seconds` of training, in the engine's clock (0: no limit)")
	fs.Float64Var(&f.evalEvery, "eval-every", defaultEvalEvery, "`epochs` between evaluations on the test set (at the next synchronisation)")
	fs.IntVar(&f.evalPoints, "eval-points", 0, "score only the first `n` test points per evaluation (0: all)")
	fs.Uint64Var(&f.seed, "seed", defaultSeed, "`seed` of every random stream (initialisation, shuffling, dropout, cost noise)")
	fs.IntVar(&f.threads, "threads", 0, "worker `threads` of the compute kernels (0: one per CPU)")
	fs.StringVar(&f.logPath, "log", "", "write the run log as JSON Lines to `file`")
	fs.BoolVar(&f.force, "force", false, "overwrite an existing --log file")
	fs.StringVar(&f.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on, off")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "save the run's state into `dir` every --checkpoint-every epochs and at the end, to continue it with --resume (a folder holds one run's checkpoints: one holding another run's, or in use, is refused before any work)")
	fs.Float64Var(&f.checkpointEvery, "checkpoint-every", 1, "`epochs` between checkpoints (0: only at the end)")
	fs.IntVar(&f.checkpointKeep, "checkpoint-keep", engine.DefaultKeep, "newest checkpoints to keep")
	fs.BoolVar(&f.keepBest, "keep-best", true, "with --checkpoint: keep the model of the best evaluation so far (P@1) in the folder's best.hck, for predict, eval and export --which best")
	fs.IntVar(&f.patience, "patience", 0, "stop early after this many evaluations in a row without a better P@1 (0: never)")
	fs.StringVar(&f.resume, "resume", "", "continue the run saved in checkpoint `dir` (its newest checkpoint) or file, with its settings, its checkpoints going on in that folder; flags given change those that may change (--epochs, --time-budget, --eval-every, --patience, --log: a new file, else the run's log continues; --checkpoint: another folder, for a new run branching off)")

	var names []string
	for _, i := range strategy.List() {
		names = append(names, i.Name)
	}
	fs.StringVar(&f.strategy, "strategy", "sync", "parallel SGD `strategy`: "+strings.Join(names, ", ")+" (hetsgd strategies)")
	fs.IntVar(&f.devices, "devices", 1, "number of devices (model replicas); under mpirun, ranks × --devices-per-rank")
	fs.IntVar(&f.devicesPerRank, "devices-per-rank", 1, "under mpirun: devices each rank holds (a node of K devices)")
	fs.Var(&f.speeds, "speeds", "relative `speed` of each device, comma-separated (default all 1)")
	fs.Var(&f.faults, "fault", "inject a fault, e.g. device=2,at=30s,kind=crash (kinds: crash; stall, given up after timeout=SECONDS, default 2s; slow=FACTOR); rank=R in place of device=N strikes a whole process of a job (under mpirun, or rank 0 alone); repeat the flag for more; seconds of the run's clock")
	fs.StringVar(&f.clock, "time", "real", "clock: real (goroutines, wall time) or virtual (deterministic simulation)")
	fs.Float64Var(&f.noise, "noise", engine.DefaultNoise, "virtual clock: σ of the log-normal noise on each batch's cost")
	fs.StringVar(&f.costPath, "cost", "", "virtual clock: cost model `file` from hetsgd calibrate (default: the built-in one)")
	fs.StringVar(&f.networkPath, "network", "", "virtual clock: network model `file` from hetsgd calibrate --network (links within and between nodes; --topology, --groups and --allreduce still apply)")
	fs.Float64Var(&f.netLatency, "net-latency", comm.DefaultNetwork.Latency, "virtual clock: `seconds` per message between devices of a node")
	fs.Float64Var(&f.netBW, "net-bandwidth", comm.DefaultNetwork.Bandwidth, "virtual clock: `bytes` per second between devices of a node")
	fs.Float64Var(&f.interLatency, "inter-latency", comm.DefaultInter.Latency, "virtual clock: `seconds` per message between nodes (with --topology or --groups)")
	fs.Float64Var(&f.interBW, "inter-bandwidth", comm.DefaultInter.Bandwidth, "virtual clock: `bytes` per second between nodes")
	fs.StringVar(&f.topology, "topology", "", "nodes × devices per node, e.g. 4x4 (sets --devices and --groups)")
	fs.IntVar(&f.groups, "groups", 0, "split the devices into this many nodes (groups) of equal size")
	fs.StringVar(&f.allReduce, "allreduce", "ring", "virtual clock: algorithm of plain all-reduces: ring, tree or hierarchical")
	fs.Float64Var(&f.prep, "prep", 0, "data preparation `seconds` per sample (Layered SGD overlaps it): charged to the virtual clock; under the real clock, busy work that simulates decoding")
	fs.BoolVar(&f.overlap, "overlap", true, "lsgd under the real clock with nodes: prepare the next batch while the nodes all-reduce (false: after, to measure what the overlap saves)")
	fs.BoolVar(&f.timingOnly, "timing-only", false, "virtual clock: charge time but compute nothing (throughput studies)")
	fs.StringVar(&f.workload, "workload", "xml", "what to train: xml (the sparse MLP on --data) or regression (the AdaCons paper's linear regression)")
	fs.IntVar(&f.dim, "dim", 1000, "dimension of --workload regression")
	fs.BoolVar(&f.lineSearch, "line-search", false, "use the optimal step of --workload regression (see --step-rule) instead of --lr")
	fs.StringVar(&f.stepRule, "step-rule", workload.RuleDistance, "with --line-search: distance (the step closest to the optimum, as the AdaCons authors' code) or loss (exact line search of the loss)")

	fs.StringVar(&f.configPath, "config", "", "read settings from `file` (YAML or JSON, keys named as these flags, a strategy's options under its name; or a run log, whose config record holds them); flags given override the file's")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the run's effective settings as a --config file and exit")
	fs.StringVar(&f.dashboard, "dashboard", "", "serve a live view of the run at `addr` (host:port, e.g. "+dashboard.DefaultAddr+"; port 0: any free one): its log's records charted as they are written; the page stays up after the run until Ctrl-C")

	// One flag per option of each strategy, named STRATEGY.OPTION (an option
	// name means one thing: adaptive.beta is not adacons.beta). Only those
	// given reach the strategy; the chosen strategy's alone may be given.
	f.options = map[string]*optionFlag{}
	for _, i := range strategy.List() {
		for _, o := range i.Options {
			v := &optionFlag{}
			f.options[i.Name+"."+o.Name] = v
			fs.Var(v, i.Name+"."+o.Name, i.Name+": "+o.Usage)
		}
	}
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f trainFlags
	fs := newFlagSet("train", "train [flags]", stderr)
	f.register(fs)
	fs.Usage = func() { trainUsage(&f, fs, stderr) }
	documentRanges(fs, engine.Ranges)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.configPath != "" {
		if f.resume != "" {
			return errors.New("--config with --resume: a resumed run takes its settings from its checkpoint")
		}
		if err := applyConfig(fs, f.configPath, visited(fs), strategy.List()); err != nil {
			return err
		}
	}
	var res *resumed
	if f.resume != "" {
		f2, fs2, r, err := resumeFlags(f.resume, args, stderr)
		if err != nil {
			return err
		}
		defer r.rd.Close()
		f, fs, res = *f2, fs2, r
		if err := res.place(&f); err != nil {
			return err
		}
	}
	if err := checkRanges(fs, engine.Ranges); err != nil {
		return err
	}
	if err := strategyOutput(&f, fs); err != nil {
		return err
	}
	// Under mpirun every rank runs this command: rank 0 drives, evaluates and
	// writes; the others serve their devices and print only their errors.
	world, err := comm.OpenWorld()
	if err != nil {
		return err
	}
	clean := false // every rank got through the run: MPI may be finalized
	defer func() {
		if clean {
			world.Close()
		}
	}()
	err = train(ctx, &f, fs, res, world, stdout, stderr)
	clean = err == nil || errors.Is(err, errInterrupted) || errors.Is(err, engine.ErrDiverged)
	return rankErr(world, err)
}

// errInterrupted ends a run stopped by a signal.
var errInterrupted = errors.New("interrupted")

func train(ctx context.Context, f *trainFlags, fs *flag.FlagSet, from *resumed, world comm.Comm, stdout, stderr io.Writer) (err error) {
	root := world.Rank() == 0
	if !root {
		stdout = io.Discard
	}
	given := givenFlags(fs, f) // as given: engineConfig fills in defaults
	cfg, err := f.engineConfig(fs, world, stderr)
	if err != nil {
		return err
	}
	if from != nil {
		cfg.Resume = from.rd
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	info, _ := strategy.Lookup(cfg.Strategy) // engineConfig looked it up
	settings := f.settings(fs, info, cfg)
	if f.printConfig {
		if !root {
			return nil
		}
		return settings.WriteYAML(stdout, fmt.Sprintf("Settings of a hetsgd train run (hetsgd %s); hetsgd train --config FILE runs it again.\n"+
			"Flags given with --config override these. Outputs (--log, --checkpoint) are not settings: give them as flags.\n"+
			"Options derived from other settings are left out, to be derived again; --help shows their values.", version))
	}
	format, err := data.ParseFormat(f.format)
	if err != nil {
		return err
	}
	showProgress, err := progressWanted(f.progress, stderr)
	if err != nil {
		return err
	}
	// The run's outputs are checked against its inputs before any work,
	// and its checkpoint folder claimed: a bad one is found now, not at the
	// first checkpoint, an epoch in.
	in := f.inputs(from)
	runID := checkpoint.NewRunID()
	if from != nil {
		runID = from.run
	}
	if root {
		if err := f.checkOutputs(in); err != nil {
			return err
		}
		if f.checkpoint != "" {
			owner := checkpoint.Owner{Run: runID}
			adopt := false
			if from != nil {
				owner.From, adopt = from.from, from.sameFolder
			}
			claim, cerr := checkpoint.Dir(f.checkpoint).Claim(owner, adopt)
			if cerr != nil {
				return cerr
			}
			defer func() {
				if err != nil {
					claim.Abandon() // a run that wrote no checkpoint leaves the folder as it was
				} else {
					claim.Release()
				}
			}()
		}
	}

	loadStart := time.Now()
	w, source, err := f.buildWorkload(ctx, format, cfg.Batch, in, stderr)
	if err != nil {
		return err
	}
	loadSeconds := time.Since(loadStart).Seconds()
	shareThreads(f.threads)
	rec, err := configRecord(*f, cfg, source, w, loadSeconds, settings)
	if err != nil {
		return err
	}
	if from != nil {
		if err := from.checkSameData(rec); err != nil {
			return err
		}
	}
	if world.Size() > 1 {
		if err := agreeRanks(world, rec, w); err != nil {
			return err
		}
	}

	if err := engine.CheckMemory(cfg, w); err != nil {
		return err
	}
	// The run is set up — a resumed one restored from its checkpoint —
	// before any output is opened: a run that cannot start writes nothing.
	prep, err := engine.Prepare(cfg, w)
	if err != nil {
		return err
	}
	defer prep.Close()
	// The log is created only once every input is known to be good, so a
	// mistyped flag never leaves an empty or truncated log behind. A
	// dashboard shows the log's records as they are written (with no
	// --log, those of a log written nowhere).
	var log *runlog.Log
	var dash *liveView
	if f.dashboard != "" && root {
		if dash, err = startDashboard(f.dashboard, fmt.Sprintf("%s ×%d", cfg.Strategy, cfg.Devices), stdout, stderr); err != nil {
			return err
		}
		defer dash.stop()
	}
	if (f.logPath != "" || dash != nil) && root {
		if err := in.Check("--log", f.logPath); err != nil { // the data's caches are known now
			return err
		}
		switch {
		case f.logPath == "":
			log = runlog.NewLog(io.Discard)
			log.Also(dash.publish)
			err = log.Write(rec)
		case from != nil:
			log, err = from.openLog(f.logPath, f.force, in, rec, dash)
		default:
			if log, err = runlog.CreateLog(f.logPath, f.force, in.Paths()...); err == nil {
				log.Also(dash.publish)
				err = log.Write(rec)
			}
		}
		if err != nil {
			log.Close()
			return err
		}
		defer func() {
			// The last records are on disk only once the log is closed.
			if cerr := log.Close(); err == nil || errors.Is(err, errInterrupted) {
				err = errors.Join(err, cerr)
			}
		}()
	}
	if f.checkpoint != "" {
		settings, err := f.savedSettings(given, rec, runID)
		if err != nil {
			return err
		}
		prep.SetCheckpointSettings(settings)
	}
	where := fmt.Sprintf("%s on %d device(s)", cfg.Strategy, cfg.Devices)
	if world.Size() > 1 {
		where += fmt.Sprintf(" across %d ranks", world.Size())
	}
	if x, ok := w.(*workload.XML); ok {
		fmt.Fprintf(stdout, "hetsgd train: %s — %d train / %d test points, %d features, %d labels; %s, %s time; seed %d\n",
			source, x.Train.Len(), x.Test.Len(), x.Train.Features(), x.Train.Labels(), where, cfg.Clock, f.seed)
	} else {
		fmt.Fprintf(stdout, "hetsgd train: %s; %s, %s time; seed %d\n", source, where, cfg.Clock, f.seed)
	}

	if from != nil {
		fmt.Fprintf(stdout, "hetsgd train: resuming %s at %d samples (%.2f epochs, %.2f train seconds)\n",
			from.rd.Path(), from.saved.Samples, float64(from.saved.Samples)/float64(w.Size()), from.saved.TrainSeconds)
	}
	_, isXML := w.(*workload.XML)
	var obs engine.Observer = &evalPrinter{w: stdout, warn: stderr, lossOnly: !isXML}
	var bar *multiObserver
	if showProgress && root {
		bar = &multiObserver{obs, newProgressBar(stderr, f.epochs, f.timeBudget)}
		obs = bar
	}
	if root {
		// Under hetsgd launch: the job's progress for the launcher, and a
		// restarted job's account of what it recovers from.
		restart, err := launch.RestartFromEnv()
		if err != nil {
			return err
		}
		if rep := launch.NewReporter(); rep != nil || restart != nil {
			if from != nil {
				rep.Resumed(from.saved.Samples, from.saved.TrainSeconds)
			}
			obs = &launchObserver{Observer: obs, rep: rep, restart: restart, log: log, stderr: stderr, ranks: world.Size()}
		}
	} else {
		obs = nil
	}
	start := time.Now()
	res, err := prep.Run(ctx, log, obs)
	if bar != nil {
		bar.finish()
	}
	if !root {
		return err
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		if res != nil {
			// The run trained: its log ends with a done record saying why
			// it stopped (a divergence, a checkpoint it could not write).
			done := res.DoneRecord()
			done.Error = message(err)
			if werr := log.Write(done); werr != nil {
				return errors.Join(err, werr)
			}
		}
		return err
	}
	done := res.DoneRecord()
	done.Interrupted = interrupted
	var untrained error
	if res.Untrained && !interrupted {
		untrained = fmt.Errorf("the run ended after %d samples (%.4g epochs), before any update reached the model %s evaluates (%s): its P@1 is the untrained model's; train for longer (--epochs, --time-budget)",
			res.Samples, float64(res.Samples)/float64(w.Size()), cfg.Strategy, centreWhy(info))
		done.Error = untrained.Error()
	}
	if cfg.Clock == engine.Real {
		// Under the virtual clock the log holds nothing that varies from run
		// to run; the peak memory goes to stdout only.
		done.WallSeconds, done.MaxRSSBytes = time.Since(start).Seconds(), maxRSS()
	}
	if rss := maxRSS(); rss > 0 {
		fmt.Fprintf(stdout, "peak memory %.2f GiB (max RSS)\n", float64(rss)/(1<<30))
	}
	best, ok := runlog.Best(res.Evals)
	if done.Layered != nil {
		fmt.Fprintf(stdout, "layered all-reduce on rank 0, per step: reduce in the node %.3f ms, next batch prepared during the nodes' all-reduce %.3f ms, then waiting for it %.3f ms, broadcast %.3f ms\n",
			done.Layered.ReduceMS, done.Layered.OverlapMS, done.Layered.WaitMS, done.Layered.BroadcastMS)
	}
	if err := log.Write(done); err != nil {
		return err
	}
	diverging := ""
	if res.Diverging {
		diverging = "; the run was diverging (see the warning)"
	}
	if res.StoppedEarly {
		diverging += fmt.Sprintf("; stopped early: no better one in %d evaluations (--patience)", f.patience)
	}
	if ok {
		if isXML {
			fmt.Fprintf(stdout, "best P@1 %.4f at %.2f train seconds (epoch %.2f)%s\n", best.P1, best.TrainSeconds, best.Epoch, diverging)
		} else {
			last := res.Evals[len(res.Evals)-1]
			fmt.Fprintf(stdout, "loss %.6g after %.2f train seconds (epoch %.2f)\n", last.Loss, last.TrainSeconds, last.Epoch)
		}
	} else if cfg.TimingOnly {
		fmt.Fprintf(stdout, "%d samples in %.4g virtual seconds: %.6g samples/s\n", res.Samples, res.TrainSeconds, float64(res.Samples)/res.TrainSeconds)
	} else {
		fmt.Fprintf(stdout, "no evaluation before the interruption (%.2f train seconds)\n", res.TrainSeconds)
	}
	if interrupted {
		return fmt.Errorf("%w after %d samples", errInterrupted, res.Samples)
	}
	if untrained != nil {
		return untrained
	}
	if dash != nil {
		if err := log.Sync(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "hetsgd train: the run is over; the dashboard stays at %s until Ctrl-C\n", dash.url)
		<-ctx.Done()
	}
	return nil
}

// centreWhy says when a strategy that evaluates its centre model updates
// it, for the message of a run that ended before it did.
func centreWhy(info strategy.Info) string {
	if info.Async {
		return "a parameter server's centre changes with its workers' commits"
	}
	return "it updates its centre model only when it merges or averages the replicas, once a mega-batch or a round"
}

// engineConfig turns the flags into an engine configuration, checking what
// the engine does not.
func (f *trainFlags) engineConfig(fs *flag.FlagSet, world comm.Comm, stderr io.Writer) (engine.Config, error) {
	set := visited(fs)
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
		f.devices, f.devicesPerRank = n, n/world.Size()
		set["devices"] = true
	} else if set["devices-per-rank"] || world.Size() > 1 {
		n := world.Size() * f.devicesPerRank
		if set["devices"] && f.devices != n {
			return engine.Config{}, fmt.Errorf("--devices %d: %d ranks of --devices-per-rank %d hold %d devices (leave --devices out)", f.devices, world.Size(), f.devicesPerRank, n)
		}
		f.devices = n
		set["devices"] = true
	}
	if f.topology != "" {
		nodes, per, ok := parseTopology(f.topology)
		if !ok {
			return engine.Config{}, fmt.Errorf("--topology %q: want NODESxDEVICES, e.g. 4x4", f.topology)
		}
		if set["devices"] && f.devices != nodes*per || set["groups"] && f.groups != nodes {
			return engine.Config{}, fmt.Errorf("--topology %s disagrees with --devices %d / --groups %d", f.topology, f.devices, f.groups)
		}
		f.devices, f.groups = nodes*per, nodes
	}
	alg, err := comm.ParseAlgorithm(f.allReduce)
	if err != nil {
		return engine.Config{}, err
	}
	net := comm.Model{Intra: comm.Network{Latency: f.netLatency, Bandwidth: f.netBW}, AllReduce: alg}
	net.Inter = net.Intra
	if f.networkPath != "" {
		if f.clock != string(engine.Virtual) {
			return engine.Config{}, fmt.Errorf("--network describes the links for --time virtual; under the real clock the links are the ones the run uses")
		}
		m, err := loadNetwork(f.networkPath)
		if err != nil {
			return engine.Config{}, err
		}
		if set["allreduce"] {
			m.AllReduce = alg
		}
		if f.groups > 0 {
			m.GroupSize = 0 // from --groups below
		}
		net = m
	}
	if f.groups > 0 {
		if f.groups > f.devices || f.devices%f.groups != 0 {
			return engine.Config{}, fmt.Errorf("--groups %d: need a divisor of --devices %d", f.groups, f.devices)
		}
		net.GroupSize = f.devices / f.groups
		if f.networkPath == "" {
			net.Inter = comm.Network{Latency: f.interLatency, Bandwidth: f.interBW}
		}
	}
	cfg := engine.Config{
		Strategy: f.strategy, Devices: f.devices, Batch: f.batch, LR: f.lr,
		Optimizer: optim.Config{Name: strings.ToLower(f.optimizer), Momentum: f.momentum, WeightDecay: f.weightDecay},
		Clock:     engine.Clock(f.clock), Epochs: f.epochs, TimeBudget: f.timeBudget,
		EvalEvery: f.evalEvery, Seed: f.seed, LineSearch: f.lineSearch,
		Noise: f.noise, Net: net, Prep: f.prep, NoOverlap: !f.overlap, TimingOnly: f.timingOnly, World: world,
	}
	if len(f.speeds) > 0 {
		cfg.Speeds = f.speeds
	}
	for _, x := range f.faults {
		if x.OnRank {
			cfg.RankFaults = append(cfg.RankFaults, x)
		} else {
			cfg.Faults = append(cfg.Faults, x)
		}
	}
	if f.checkpoint != "" {
		cfg.Checkpoint = engine.Checkpointing{Dir: f.checkpoint, Every: f.checkpointEvery, Keep: f.checkpointKeep, KeepBest: f.keepBest}
	}
	cfg.Patience = f.patience
	cfg.Options = f.givenOptions(f.strategy)
	cfg.Paper = f.paper
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
	if f.costPath != "" {
		c, err := cost.Load(f.costPath)
		if err != nil {
			return cfg, err
		}
		cfg.Cost = c
	}
	return cfg, cfg.Validate()
}

// givenOptions returns the options of strategy name given as flags (or in a
// config file), by their names without the strategy's.
func (f *trainFlags) givenOptions(name string) map[string]float64 {
	var m map[string]float64
	for k, o := range f.options {
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
func (f *trainFlags) checkOptions(name string) error {
	var other []string
	for k, o := range f.options {
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
func inapplicable(info strategy.Info, optimizer string, f *trainFlags, ranks int) map[string]notApplying {
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
	realClock := f.clock == string(engine.Real)
	if realClock && !info.Groups {
		add(true, "does nothing for "+info.Name+" under the real clock: nodes shape the virtual clock's network, and Layered SGD's (lsgd) layers", "groups", "topology")
	}
	if !info.Groups || !realClock || (ranks == 1 && f.groups == 0 && f.topology == "") {
		add(false, "applies to lsgd under the real clock with nodes (--groups, --topology or mpirun) only; ignored", "overlap")
	}
	if realClock {
		add(false, "describes the virtual clock; ignored under --time real", "noise", "cost", "net-latency", "net-bandwidth", "inter-latency", "inter-bandwidth", "allreduce")
	} else if f.networkPath != "" {
		add(true, "and --network both describe the links: give one of them", "net-latency", "net-bandwidth", "inter-latency", "inter-bandwidth")
	}
	if f.workload == "regression" {
		add(false, "applies to --workload xml only; ignored", "hidden", "dropout", "data", "train", "test", "format", "cache", "eval-points")
	}
	if f.output != "lsh" || f.workload == "regression" {
		add(true, "applies with --output lsh only", "lsh-hash", "lsh-k", "lsh-l", "lsh-capacity", "lsh-active", "lsh-fill", "lsh-update", "lsh-correct", "lsh-rehash", "lsh-rebuild", "lsh-growth")
	}
	if f.workload == "regression" {
		add(true, "applies to --workload xml only", "output")
	} else if f.output == "lsh" && !realClock {
		add(true, "lsh runs under the real clock only (--time real): the virtual clock's cost model has no term for a sampled output layer", "output")
	}
	if f.workload != "regression" {
		add(true, "applies to --workload regression only", "dim", "step-rule", "line-search")
	} else if !f.lineSearch {
		add(false, "applies with --line-search only; ignored", "step-rule")
	}
	return out
}

// strategyOutput gives a strategy that trains one output layer only
// (strategy.Info.Output) that layer: slide gets --output lsh in
// workload.Sampling.SLIDE's mode (--lsh-fill point, --lsh-update dense,
// --lsh-correct=false), as SLIDE's code trains. A flag given against it is
// an error.
func strategyOutput(f *trainFlags, fs *flag.FlagSet) error {
	info, err := strategy.Lookup(f.strategy)
	if err != nil || info.Output != "slide" {
		return nil // an unknown strategy is the engine's error
	}
	if f.workload != "xml" {
		return fmt.Errorf("--workload %s: %s trains the sparse MLP (--workload xml)", f.workload, f.strategy)
	}
	given := visited(fs)
	m := workload.DefaultSampling().SLIDE()
	for _, s := range []struct{ flag, want string }{{"output", "lsh"}, {"lsh-fill", m.Fill}, {"lsh-update", m.Update}, {"lsh-correct", strconv.FormatBool(m.Correct)}} {
		if fl := fs.Lookup(s.flag); given[s.flag] && fl.Value.String() != s.want {
			return fmt.Errorf("--%s %s: %s trains the sampled output layer as SLIDE's code does (--%s %s)", s.flag, fl.Value, f.strategy, s.flag, s.want)
		}
		if err := fs.Set(s.flag, s.want); err != nil {
			return err
		}
	}
	return nil
}

// notApplying is why a flag does nothing for a run.
type notApplying struct {
	why   string
	fatal bool
}

// checkApplies rejects a given flag that would do nothing for the run where
// a user would expect it to change the run, and warns about one that is
// harmlessly ignored.
func checkApplies(info strategy.Info, optimizer string, set map[string]bool, f *trainFlags, ranks int, stderr io.Writer, root bool) error {
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

// loadNetwork reads a network model written by calibrate --network.
func loadNetwork(path string) (comm.Model, error) {
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

func visited(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// buildWorkload loads the data and builds what the devices train.
func (f *trainFlags) buildWorkload(ctx context.Context, format data.Format, batch int, in *atomicfile.Inputs, stderr io.Writer) (engine.Workload, string, error) {
	switch f.workload {
	case "regression":
		if f.dim < 1 {
			return nil, "", fmt.Errorf("--dim %d: need at least 1", f.dim)
		}
		w := &workload.Regression{D: f.dim, Points: 10000, Rule: f.stepRule}
		if err := w.CheckRule(); err != nil {
			return nil, "", fmt.Errorf("--step-rule %q: want %s or %s", f.stepRule, workload.RuleDistance, workload.RuleLoss)
		}
		return w, fmt.Sprintf("linear regression in %d dimensions", f.dim), nil
	case "xml":
	default:
		return nil, "", fmt.Errorf("--workload %q: want xml or regression", f.workload)
	}
	if f.output != "dense" && f.output != "lsh" {
		return nil, "", fmt.Errorf("--output %q: want dense or lsh", f.output)
	}
	mode, err := data.ParseCacheMode(f.cache)
	if err != nil {
		return nil, "", fmt.Errorf("--cache: %w", err)
	}
	l := data.Loader{Format: format, Cache: mode, Log: stderr, Context: ctx, Opened: dataInputs(in)}
	trainSet, testSet, source, err := loadData(l, f.trainPath, f.testPath, f.dataDir)
	if err != nil {
		return nil, "", err
	}
	w, err := workload.NewXML(trainSet, testSet, f.hidden, f.dropout, f.evalPoints, max(batch, 256))
	if err == nil && f.output == "lsh" {
		err = w.SetSampling(f.lsh)
	}
	return w, source, err
}

func loadData(l data.Loader, trainPath, testPath, dir string) (trainSet, testSet *data.Dataset, source string, err error) {
	switch {
	case dir != "" && (trainPath != "" || testPath != ""):
		return nil, nil, "", errors.New("give either --data or --train/--test, not both")
	case dir != "":
		trainSet, testSet, err = l.LoadDir(dir)
		return trainSet, testSet, dir, err
	case trainPath != "" && testPath != "":
		trainSet, testSet, err = l.LoadPair(trainPath, testPath)
		return trainSet, testSet, trainPath, err
	case trainPath != "" || testPath != "":
		return nil, nil, "", errors.New("--train and --test go together (or use --data DIR)")
	}
	trainSet, testSet, err = data.Bundled(bundledDefault)
	return trainSet, testSet, "bundled " + bundledDefault, err
}

// configRecord is the run log's first record: the engine's account of the
// run, with the data's source, the tool's version and the run's settings.
func configRecord(f trainFlags, cfg engine.Config, source string, w engine.Workload, loadSeconds float64, settings runlog.Settings) (runlog.Config, error) {
	rec, err := engine.Record(cfg, w)
	if err != nil {
		return rec, err
	}
	rec.Version, rec.Command, rec.Settings = version, "train", settings
	rec.Data, rec.Train, rec.Test = source, f.trainPath, f.testPath
	if x, ok := w.(*workload.XML); ok {
		rec.EvalPoints = f.evalPoints
		rec.DataDigest = dataDigest(x)
	}
	if cfg.Clock != engine.Virtual {
		rec.Time = time.Now().UTC().Format(time.RFC3339)
		rec.LoadSeconds = loadSeconds
	}
	return rec, nil
}

// evalPrinter prints one line per evaluation on stdout (the loss alone for
// workloads P@k does not apply to), and warnings on stderr.
type evalPrinter struct {
	w, warn  io.Writer
	lossOnly bool
}

func (p *evalPrinter) Warn(w runlog.Warning) {
	fmt.Fprintf(p.warn, "hetsgd train: warning: %s\n", w.Text)
}

func (p *evalPrinter) Step(float64, int64, float64, float64) {}

func (p *evalPrinter) Eval(r runlog.Eval) {
	if p.lossOnly {
		fmt.Fprintf(p.w, "epoch %6.2f  train %7.2fs  loss %.6g  train loss %.6g\n", r.Epoch, r.TrainSeconds, r.Loss, r.TrainLoss)
		return
	}
	fmt.Fprintf(p.w, "epoch %6.2f  train %7.2fs  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@5 %.4f  loss %.4f  train loss %.4f\n",
		r.Epoch, r.TrainSeconds, r.P1, r.P3, r.P5, r.NDCG5, r.Loss, r.TrainLoss)
}

// trainUsage is "train --help": the run's effective settings for the
// strategy chosen so far on the command line (sync unless --strategy came
// before --help), then the flags, with only that strategy's options.
func trainUsage(f *trainFlags, fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: hetsgd train [flags]\n\n")
	info, err := strategy.Lookup(f.strategy)
	if err != nil {
		info, _ = strategy.Lookup("sync")
	}
	set := visited(fs)
	cfg := engine.Config{Strategy: info.Name, Devices: f.devices, Paper: f.paper, Options: f.givenOptions(info.Name)}
	if set["batch"] {
		cfg.Batch = f.batch
	}
	if set["lr"] {
		cfg.LR = f.lr
	}
	if set["optimizer"] {
		cfg.Optimizer.Name = strings.ToLower(f.optimizer)
	}
	fmt.Fprintf(w, "Settings of --strategy %s on %d device(s) (hetsgd strategies -v lists every strategy):\n", info.Name, f.devices)
	points := 0 // known once the data is loaded
	if f.dataDir == "" && f.trainPath == "" {
		points = bundledPoints
	}
	if err := describeStrategy(w, "  ", cfg, points, set); err != nil {
		fmt.Fprintf(w, "  %v\n", err)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	show := flag.NewFlagSet("train", flag.ContinueOnError)
	show.SetOutput(w)
	fs.VisitAll(func(fl *flag.Flag) {
		if _, isOption := f.options[fl.Name]; isOption && !strings.HasPrefix(fl.Name, info.Name+".") {
			return // another strategy's option
		}
		show.Var(fl.Value, fl.Name, fl.Usage)
		show.Lookup(fl.Name).DefValue = fl.DefValue
	})
	show.PrintDefaults()
}
