package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/progress"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/runlog"
	_ "github.com/hetsgd/hetsgd/strategy/all" // the studies name every strategy
	"github.com/hetsgd/hetsgd/workload"
)

// Set is a dataset prepared for a study: the papers' MLP (one hidden layer
// of 128, no dropout) on it.
type Set struct {
	Name     string
	Train    *data.Dataset
	Workload engine.Workload
	Note     string // where it comes from, how it was scaled
}

// NewSet builds the study workload of a train/test pair.
func NewSet(name string, train, test *data.Dataset, note string) (Set, error) {
	w, err := workload.NewXML(train, test, []int{128}, 0, 0, 256)
	return Set{Name: name, Train: train, Workload: w, Note: note}, err
}

// Options are shared by the studies.
type Options struct {
	Quick bool      // small budgets and few settings: a smoke test, not a result
	Seed  uint64    // seed of every run
	Log   io.Writer // one line per run as it ends (nil: quiet)
	// Progress, when set, is told of each run as a stage of its own: its
	// number and name, and after each batch its epochs done (or its
	// training seconds, when it has a time budget and no epoch limit).
	Progress stage.Reporter
	// Parts are the sections of the heterogeneity and paper studies to
	// run, of HeterogeneityParts and PaperParts; a study none of whose
	// sections is named runs all of them.
	Parts []string
	// Reuse reads a run back from its log in the report folder's runs/
	// instead of running it again, when that log is complete and from the
	// same configuration: a bench stopped part-way carries on where it
	// was. The GEM and AdaCons studies run every run again: they read a
	// result's staleness and step counts, which a log does not hold.
	Reuse bool
	// Network replaces the links of the Layered SGD study (nil: PCIe within
	// a node, 25 Gb/s Ethernet between nodes); NetworkSource says where it
	// came from, for the report.
	Network       *comm.Model
	NetworkSource string
}

// runner executes engine runs for a study and keeps their logs.
type runner struct {
	opt  Options
	rep  *report.Dir
	runs int
}

func newRunner(rep *report.Dir, opt Options) (*runner, error) {
	if err := os.MkdirAll(filepath.Join(rep.Path, "runs"), 0o755); err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	return &runner{opt: opt, rep: rep}, nil
}

// run executes one configuration, writing its log to runs/NAME.jsonl.
// With Options.Reuse, a complete log already there from the same
// configuration is read back instead (reused).
func (r *runner) run(ctx context.Context, name string, set Set, cfg engine.Config) (_ *engine.Result, err error) {
	r.runs++
	path := filepath.Join(r.rep.Path, "runs", name+".jsonl")
	// The same config record as hetsgd train's, less the settings (no
	// flags made the run), with the study's name for the run.
	full, err := cfg.WithDefaults()
	if err != nil {
		return nil, fmt.Errorf("repro: run %s: %w", name, err)
	}
	rec, err := engine.Record(full, set.Workload)
	if err != nil {
		return nil, fmt.Errorf("repro: run %s: %w", name, err)
	}
	rec.Command, rec.Name, rec.Data = "bench", name, set.Name
	if r.opt.Reuse {
		if res := reused(path, rec); res != nil {
			if r.opt.Log != nil {
				best, _ := runlog.Best(res.Evals)
				fmt.Fprintf(r.opt.Log, "[%3d] %-52s best P@1 %.4f at %7.3f s (%s clock)  %5.1f epochs  read back from its log\n",
					r.runs, name, best.P1, best.TrainSeconds, cfg.Clock, float64(res.Samples)/float64(set.Workload.Size()))
			}
			return res, nil
		}
	}
	log, err := runlog.CreateLog(path, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := log.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("repro: run %s: %w", name, cerr)
		}
	}()
	if err := log.Write(rec); err != nil {
		return nil, err
	}
	start := time.Now()
	var obs engine.Observer
	if rep := r.opt.Progress; rep != nil {
		p := &progress.Run{Reporter: rep, Epochs: full.Epochs, Budget: full.TimeBudget}
		switch {
		case full.Epochs > 0:
			p.Scale = full.Epochs
			rep.Stage(fmt.Sprintf("run %d", r.runs), full.Epochs, "epochs")
		case full.TimeBudget > 0:
			p.Scale = full.TimeBudget
			rep.Stage(fmt.Sprintf("run %d", r.runs), full.TimeBudget, "s of "+string(full.Clock)+" time")
		default:
			rep.Stage(fmt.Sprintf("run %d", r.runs), 0, "")
		}
		rep.Update(0, name)
		obs = p
	}
	res, err := engine.Run(ctx, cfg, set.Workload, log, obs)
	if err != nil && !errors.Is(err, engine.ErrDiverged) {
		return nil, fmt.Errorf("repro: run %s: %w", name, err)
	}
	if werr := log.Write(res.DoneRecord()); werr != nil {
		return nil, fmt.Errorf("repro: run %s: %w", name, werr)
	}
	// The studies read a run's records, not its model (412 MB at the
	// Amazon-670K shape, kept for every run of a study otherwise), and the
	// next run should find the memory this one held returned: without it
	// the garbage collector lets a run allocate beside the last one's
	// garbage until the heap doubles.
	res.Model = nil
	debug.FreeOSMemory()
	if r.opt.Log != nil {
		best, _ := runlog.Best(res.Evals)
		fmt.Fprintf(r.opt.Log, "[%3d] %-52s best P@1 %.4f at %7.3f s (%s clock)  %5.1f epochs  %5.1fs wall\n",
			r.runs, name, best.P1, best.TrainSeconds, cfg.Clock, float64(res.Samples)/float64(set.Workload.Size()), time.Since(start).Seconds())
	}
	return res, nil
}

// reused returns the result of the run logged at path when that log is
// complete (a done record, not interrupted, no error) and its config record
// is rec: what the studies read of a result, from the log's records. Any
// other log (none, partial, another configuration, unreadable) gives nil:
// the run is run again.
func reused(path string, rec runlog.Config) *engine.Result {
	run, err := runlog.ReadFile(path)
	if err != nil || run.Config == nil || run.Done == nil || run.Done.Interrupted || run.Done.Error != "" {
		return nil
	}
	want, err1 := json.Marshal(rec)
	got, err2 := json.Marshal(run.Config)
	if err1 != nil || err2 != nil || !bytes.Equal(want, got) {
		return nil
	}
	d := run.Done
	return &engine.Result{Evals: run.Evals, Merges: run.Merges, Async: run.Async, Faults: run.Faults, Notes: len(run.Notes),
		TrainSeconds: d.TrainSeconds, Samples: d.Samples, Diverged: d.Diverged, Diverging: d.Diverging, StoppedEarly: d.StoppedEarly}
}

// Curves drawn from a run.

func timeCurve(res *engine.Result) (x, y []float64) {
	for _, e := range res.Evals {
		x = append(x, e.TrainSeconds)
		y = append(y, e.P1)
	}
	return x, y
}

// megaCurve is P@1 against mega-batches processed (samples / mega-batch).
func megaCurve(res *engine.Result, megaSamples float64) (x, y []float64) {
	for _, e := range res.Evals {
		x = append(x, float64(e.Samples)/megaSamples)
		y = append(y, e.P1)
	}
	return x, y
}

func best(res *engine.Result) runlog.Eval {
	b, _ := runlog.Best(res.Evals)
	return b
}

// timeTo returns the training seconds at which P@1 first reaches target,
// NaN if never.
func timeTo(res *engine.Result, target float64) float64 {
	if t, ok := runlog.TimeTo(res.Evals, target); ok {
		return t
	}
	return math.NaN()
}

// partsOf returns whether a study whose sections are all runs the section
// p, given the sections named (Options.Parts, shared by every study): the
// named ones of its own, or all of them when none of its own is named, as
// a study without sections runs whole.
func partsOf(all, named []string) func(p string) bool {
	var own []string
	for _, p := range named {
		if slices.Contains(all, p) {
			own = append(own, p)
		}
	}
	return func(p string) bool { return len(own) == 0 || slices.Contains(own, p) }
}

// count writes a small number as a word, as the report's sentences do
// ("the lowest of the four bests").
func count(n int) string {
	if words := []string{"zero", "one", "two", "three", "four", "five"}; n >= 0 && n < len(words) {
		return words[n]
	}
	return fmt.Sprint(n)
}

func yesNo(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "**no**"
}

func slug(s string) string {
	return strings.NewReplacer(" ", "-", "/", "-", "=", "", ",", "-", ".", "p").Replace(s)
}

func numCPU() int { return runtime.NumCPU() }
