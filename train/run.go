package train

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/progress"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/tfidf"
	"github.com/hetsgd/hetsgd/workload"
)

// ErrInterrupted ends a run stopped by a signal.
var ErrInterrupted = errors.New("interrupted")

// Front is what Run needs of the front end that starts it: where it
// reports, its version (for the run log), how it names settings in
// messages (Message), whether to draw a progress bar (asked once the
// settings are known good), and how it starts a live dashboard at an
// address.
type Front struct {
	Stdout, Stderr io.Writer
	Version        string
	Message        func(error) string
	Progress       func() (bool, error)
	Dashboard      func(addr, name string) (*dashboard.Live, error)
}

// Run runs the training job f describes (fs: the flags it was parsed
// from; from: the checkpoint it resumes, or nil) on this rank of world, as
// hetsgd train does: it checks the settings, inputs and outputs before
// any work, claims the checkpoint folder, loads the data, makes the ranks
// agree, writes the run log and reports on front's writers. Under mpirun
// every rank runs it: rank 0 drives, evaluates and writes; the others serve
// their devices.
func Run(ctx context.Context, f *Settings, fs *flag.FlagSet, from *Resumed, world comm.Comm, front Front) (err error) {
	stdout, stderr := front.Stdout, front.Stderr
	root := world.Rank() == 0
	if !root {
		stdout = io.Discard
	}
	p, err := Plan(f, fs, from, world, stderr)
	if err != nil {
		return err
	}
	given, cfg, info, settings, format := p.Given, p.Config, p.Strategy, p.Settings, p.Format
	if f.PrintConfig {
		if !root {
			return nil
		}
		return settings.WriteYAML(stdout, fmt.Sprintf("Settings of a hetsgd train run (hetsgd %s); hetsgd train --config FILE runs it again.\n"+
			"Flags given with --config override these. Outputs (--log, --checkpoint) are not settings: give them as flags.\n"+
			"Options derived from other settings are left out, to be derived again; --help shows their values.", front.Version))
	}
	showProgress, err := front.Progress()
	if err != nil {
		return err
	}
	// The run's outputs are checked against its inputs before any work,
	// and its checkpoint folder claimed: a bad one is found now, not at the
	// first checkpoint, an epoch in.
	in := f.Inputs(from)
	var claim *checkpoint.Claim
	runID := checkpoint.NewRunID()
	if from != nil {
		runID = from.Run()
	}
	if root {
		if err := f.CheckOutputs(in); err != nil {
			return err
		}
		if f.Checkpoint != "" {
			owner := checkpoint.Owner{Run: runID}
			adopt := false
			if from != nil {
				owner.From, adopt = from.From()
			}
			var cerr error
			if claim, cerr = checkpoint.Dir(f.Checkpoint).Claim(owner, adopt); cerr != nil {
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
	w, source, err := f.BuildWorkload(ctx, format, cfg.Batch, in, stderr)
	if err != nil {
		return err
	}
	loadSeconds := time.Since(loadStart).Seconds()
	if err := attachVectorizer(claim, f.DataDir); err != nil {
		return err
	}
	ShareThreads(f.Threads)
	// The precision is the kernels' for the run's length: a program that
	// runs several gets its own back.
	defer kernel.UsePrecision(kernel.Precision())
	if bf, _ := kernel.UsePrecision(f.Precision); f.Precision == kernel.BF16 && !bf && root {
		fmt.Fprintf(stderr, "--precision bf16: the %s kernels have no bf16 products (they need AVX512-BF16); the products stay fp32\n", kernel.Impl())
	}
	rec, err := ConfigRecord(front.Version, *f, cfg, source, w, loadSeconds, settings)
	if err != nil {
		return err
	}
	if from != nil {
		if err := from.CheckSameData(rec); err != nil {
			return err
		}
	}
	if world.Size() > 1 {
		if err := AgreeRanks(world, rec, w); err != nil {
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
	var dash *dashboard.Live
	if f.Dashboard != "" && root {
		if dash, err = front.Dashboard(f.Dashboard, fmt.Sprintf("%s ×%d", cfg.Strategy, cfg.Devices)); err != nil {
			return err
		}
		defer dash.Stop()
	}
	if (f.Log != "" || dash != nil) && root {
		if err := in.Check("--log", f.Log); err != nil { // the data's caches are known now
			return err
		}
		switch {
		case f.Log == "":
			log = runlog.NewLog(io.Discard)
			log.Also(dash.Publish)
			err = log.Write(rec)
		case from != nil:
			log, err = from.OpenLog(f.Log, f.Force, in, rec, dash)
		default:
			if log, err = runlog.CreateLog(f.Log, f.Force, in.Paths()...); err == nil {
				log.Also(dash.Publish)
				err = log.Write(rec)
			}
		}
		if err != nil {
			log.Close()
			return err
		}
		defer func() {
			// The last records are on disk only once the log is closed.
			if cerr := log.Close(); err == nil || errors.Is(err, ErrInterrupted) {
				err = errors.Join(err, cerr)
			}
		}()
	}
	if f.Checkpoint != "" {
		settings, err := f.SavedSettings(given, rec, runID)
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
			source, x.Train.Len(), x.Test.Len(), x.Train.Features(), x.Train.Labels(), where, cfg.Clock, f.Seed)
		if note := OutputNote(f.Output, x.Train.Labels()); note != "" && root {
			fmt.Fprintf(stderr, "hetsgd train: warning: %s\n", note)
		}
	} else {
		fmt.Fprintf(stdout, "hetsgd train: %s; %s, %s time; seed %d\n", source, where, cfg.Clock, f.Seed)
	}

	if from != nil {
		fmt.Fprintf(stdout, "hetsgd train: resuming %s at %d samples (%.2f epochs, %.2f train seconds)\n",
			from.Reader().Path(), from.Saved().Samples, float64(from.Saved().Samples)/float64(w.Size()), from.Saved().TrainSeconds)
	}
	_, isXML := w.(*workload.XML)
	var obs engine.Observer = &evalPrinter{w: stdout, warn: stderr, lossOnly: !isXML}
	var bar *progress.Observer
	if showProgress && root {
		bar = &progress.Observer{Printer: obs, Bar: progress.New(stderr, f.Epochs, f.TimeBudget)}
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
				rep.Resumed(from.Saved().Samples, from.Saved().TrainSeconds)
			}
			obs = &LaunchObserver{Observer: obs, Reporter: rep, Restart: restart, Log: log, Stderr: stderr, Ranks: world.Size()}
		}
	} else {
		obs = nil
	}
	start := time.Now()
	res, err := prep.Run(ctx, log, obs)
	if bar != nil {
		bar.Finish()
	}
	if !root {
		return err
	}
	if err := Report(front, log, res, err, Ran{Config: cfg, Strategy: info, Points: w.Size(), XML: isXML, Patience: f.Patience, Wall: time.Since(start)}); err != nil {
		return err
	}
	if dash != nil {
		if err := log.Sync(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "hetsgd train: the run is over; the dashboard stays at %s until Ctrl-C\n", dash.URL)
		<-ctx.Done()
	}
	return nil
}

// Planned is what Plan makes of a run's settings before any input is
// read: the engine's configuration with the strategy's defaults filled
// in (and the checkpoint it resumes), the strategy, the settings as the
// run records them, those given, and the data's format.
type Planned struct {
	Config   engine.Config
	Strategy strategy.Info
	Settings runlog.Settings
	Given    [][2]string
	Format   data.Format
}

// Plan is Run's first step: it checks f's settings (fs: the flags they
// were parsed from; from: the checkpoint resumed, or nil) on this rank of
// world and turns them into the run's configuration, reading no input and
// writing no output (warnings go to stderr).
func Plan(f *Settings, fs *flag.FlagSet, from *Resumed, world comm.Comm, stderr io.Writer) (*Planned, error) {
	given := Given(fs, f) // as given: EngineConfig fills in defaults
	cfg, err := f.EngineConfig(fs, world, stderr)
	if err != nil {
		return nil, err
	}
	if from != nil {
		cfg.Resume = from.Reader()
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	info, _ := strategy.Lookup(cfg.Strategy) // EngineConfig looked it up
	format, err := data.ParseFormat(f.Format)
	if err != nil {
		return nil, err
	}
	if f.Precision != kernel.FP32 && f.Precision != kernel.BF16 {
		return nil, fmt.Errorf("--precision %q: want %s or %s", f.Precision, kernel.FP32, kernel.BF16)
	}
	return &Planned{Config: cfg, Strategy: info, Settings: f.Effective(fs, info, cfg), Given: given, Format: format}, nil
}

// Ran is what Report needs to know of the run that ended: its
// configuration and strategy, its training points, whether its workload is
// a classifier's (XML) whose precision it prints, its patience, and the
// wall time it ran.
type Ran struct {
	Config   engine.Config
	Strategy strategy.Info
	Points   int
	XML      bool
	Patience int
	Wall     time.Duration
}

// Report is Run's last step on rank 0: it writes the run's done record
// into log (nil: none) from res and the engine's error runErr, prints the
// outcome on front's writers, and returns the error the run ends with: an
// engine's, ErrInterrupted for a stop by a signal, or the run's having
// ended before any update reached the model it evaluates.
func Report(front Front, log *runlog.Log, res *engine.Result, runErr error, ran Ran) error {
	stdout, stderr := front.Stdout, front.Stderr
	cfg, info, err := ran.Config, ran.Strategy, runErr
	interrupted := errors.Is(err, context.Canceled)
	if interrupted && res != nil && res.StopCheckpoint != "" {
		fmt.Fprintf(stderr, "hetsgd train: saved the stopped run in %s: hetsgd train --resume %s goes on from it\n",
			res.StopCheckpoint, filepath.Dir(res.StopCheckpoint))
	}
	if res == nil {
		return err // stopped or failed before it trained: no done record
	}
	if err != nil && !interrupted {
		if res != nil {
			// The run trained: its log ends with a done record saying why
			// it stopped (a divergence, a checkpoint it could not write).
			done := res.DoneRecord()
			done.Error = front.Message(err)
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
			res.Samples, float64(res.Samples)/float64(ran.Points), cfg.Strategy, CentreWhy(info))
		done.Error = untrained.Error()
	}
	if cfg.Clock == engine.Real {
		// Under the virtual clock the log holds nothing that varies from run
		// to run; the peak memory goes to stdout only.
		done.WallSeconds, done.MaxRSSBytes = ran.Wall.Seconds(), maxRSS()
	}
	if rss := maxRSS(); rss > 0 {
		fmt.Fprintf(stdout, "peak memory %.2f GiB (max RSS)\n", float64(rss)/(1<<30))
	}
	if done.Layered != nil {
		fmt.Fprintf(stdout, "layered all-reduce on rank 0, per step: reduce in the node %.3f ms, next batch prepared during the nodes' all-reduce %.3f ms, then waiting for it %.3f ms, broadcast %.3f ms\n",
			done.Layered.ReduceMS, done.Layered.OverlapMS, done.Layered.WaitMS, done.Layered.BroadcastMS)
	}
	if err := log.Write(done); err != nil {
		return err
	}
	fmt.Fprintln(stdout, Outcome(res, ran.XML, cfg.TimingOnly, ran.Patience))
	if interrupted {
		return fmt.Errorf("%w after %d samples", ErrInterrupted, res.Samples)
	}
	return untrained
}

// Outcome is the line a finished run's account ends with, on stdout: the
// best P@1 and when it was reached (for a regression, the last loss), with
// what marked the run (diverging, stalled, stopped early by patience); a
// timing-only run's samples/s; or that no evaluation came before an
// interruption.
func Outcome(res *engine.Result, isXML, timingOnly bool, patience int) string {
	marks := ""
	if res.Diverging {
		marks = "; the run was diverging (see the warning)"
	}
	if res.Stalled {
		marks += "; the run stalled: its loss did not fall (see the warning)"
	}
	if res.StoppedEarly {
		marks += fmt.Sprintf("; stopped early: no better one in %d evaluations (--patience)", patience)
	}
	best, ok := runlog.Best(res.Evals)
	switch {
	case ok && isXML:
		return fmt.Sprintf("best P@1 %.4f at %.2f train seconds (epoch %.2f)%s", best.P1, best.TrainSeconds, best.Epoch, marks)
	case ok:
		last := res.Evals[len(res.Evals)-1]
		return fmt.Sprintf("loss %.6g after %.2f train seconds (epoch %.2f)", last.Loss, last.TrainSeconds, last.Epoch)
	case timingOnly:
		return fmt.Sprintf("%d samples in %.4g virtual seconds: %.6g samples/s", res.Samples, res.TrainSeconds, float64(res.Samples)/res.TrainSeconds)
	}
	return fmt.Sprintf("no evaluation before the interruption (%.2f train seconds)", res.TrainSeconds)
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
	fmt.Fprintf(p.w, "epoch %6.2f  train %7.2fs  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@5 %.4f  PSP@5 %.4f  loss %.4f  train loss %.4f\n",
		r.Epoch, r.TrainSeconds, r.P1, r.P3, r.P5, r.NDCG5, r.PSP5, r.Loss, r.TrainLoss)
}

// attachVectorizer copies into the checkpoint folder of claim (nil: none)
// the text vectorizer of a --data folder that has one (hetsgd data
// from-text's tfidf.json), so that the folder's models score text without
// the data (package trained, Model.Text).
func attachVectorizer(claim *checkpoint.Claim, dataDir string) error {
	if claim == nil || dataDir == "" || strings.HasPrefix(dataDir, "bundled:") {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dataDir, tfidf.File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = claim.Attach(tfidf.File, b)
	}
	if err != nil {
		return fmt.Errorf("--data %s's vectorizer: %w", dataDir, err)
	}
	return nil
}
