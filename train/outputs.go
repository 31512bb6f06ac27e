package train

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/runlog"
)

// An output never replaces an input of the same command. Each command
// lists every file it reads — data (and the caches it loads), config file,
// model, checkpoint, cost and network models — in an atomicfile.Inputs, and
// checks each output against them by the files' identity before writing:
// the run log, the checkpoint folder, predictions, exports, figures,
// reports. The checks run before any work, and again where an input is
// known only later (a data cache).

// Inputs returns the files a train run reads, as far as its flags name
// them; the data's caches join them as the data loads.
func (f *Settings) Inputs(from *Resumed) *atomicfile.Inputs {
	in := &atomicfile.Inputs{}
	in.Add("--config file", f.Config)
	in.Add("--train file", f.TrainPath)
	in.Add("--test file", f.TestPath)
	in.Add("--data", f.DataDir)
	in.Add("--cost file", f.Cost)
	in.Add("--network file", f.Network)
	if from != nil {
		in.Add("checkpoint being resumed", from.rd.Path())
	}
	// The checkpoint folder's files — earlier checkpoints, the best model —
	// are the run's to replace and prune, and no other output's.
	if atomicfile.IsDir(f.Checkpoint) {
		in.Add("file of the checkpoint folder", f.Checkpoint)
	}
	return in
}

// CheckOutputs refuses outputs of the run that would replace an input, and
// a log named as one of the checkpoint folder's own files (a checkpoint
// would replace it, or pruning remove it).
func (f *Settings) CheckOutputs(in *atomicfile.Inputs) error {
	if err := in.Check("--log", f.Log); err != nil {
		return err
	}
	if f.Checkpoint == "" {
		return nil
	}
	if err := in.Check("--checkpoint", f.Checkpoint, "checkpoint being resumed", "file of the checkpoint folder"); err != nil {
		return err
	}
	dir := filepath.Dir(f.Log)
	inFolder := atomicfile.SameFile(dir, f.Checkpoint) || filepath.Clean(dir) == filepath.Clean(f.Checkpoint)
	if f.Log != "" && inFolder && checkpoint.Reserved(filepath.Base(f.Log)) {
		return fmt.Errorf("--log %s: a name of the checkpoint folder's own files (checkpoints, run.json): name the log otherwise", f.Log)
	}
	return nil
}

// lshSmall is the label count under which a run with --output lsh is
// warned that the dense layer is likely faster. BENCHMARKS.md §17
// measured the sampled layer slower than the dense one on Bibtex (159
// labels) and Delicious (983): 0.94–1.73× dense's training time, median
// 1.28× (bench/lsh_small.sh); §12 faster from 205,443 labels (1.8× dense's
// samples/s) and 670,091 (8–10×). Between 983 and 205,443 labels it is not
// measured: the warning is given an order of magnitude above the largest
// set it lost on.
const lshSmall = 10_000

// OutputNote returns a warning for a run whose output layer is not the
// one that pays at its label count (--output lsh on fewer than lshSmall
// labels), or "".
func OutputNote(output string, labels int) string {
	if output != "lsh" || labels >= lshSmall {
		return ""
	}
	return fmt.Sprintf("--output lsh on %d labels: the sampled layer pays at hundreds of thousands of labels (8–10× dense's samples/s at 670,091, 1.8× at 205,443) and was measured slower than the dense layer on small label sets (159 and 983 labels: up to 1.7× dense's training time); --output dense is likely faster here", labels)
}

// CheckOutputFlags refuses a flag of the checkpoint folder given without
// one (--keep-best, --checkpoint-every, --checkpoint-keep): the run would
// keep nothing, where its user expects a model kept.
func (f *Settings) CheckOutputFlags(fs *flag.FlagSet) error {
	if f.Checkpoint != "" {
		return nil
	}
	given := Visited(fs)
	for _, name := range []string{"keep-best", "checkpoint-every", "checkpoint-keep"} {
		if given[name] {
			return fmt.Errorf("--%s applies with --checkpoint only: it is about the checkpoint folder, where the run keeps its checkpoints and its best model (add --checkpoint DIR)", name)
		}
	}
	return nil
}

// savedSettings is the "settings" section of the run's checkpoints: given
// are the flags as given, rec the config record, run the run's id; the
// log's whereabouts are taken from the open log (see savedSettings).
func (f *Settings) SavedSettings(given [][2]string, rec runlog.Config, run string) ([]byte, error) {
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	s := savedSettings{Flags: given, Log: f.Log, Config: recJSON, Run: run}
	if f.Log != "" && atomicfile.IsRegular(f.Log) {
		if abs, err := filepath.Abs(f.Log); err == nil {
			s.LogAbs = abs
			if ck, err := filepath.Abs(f.Checkpoint); err == nil {
				if rel, err := filepath.Rel(ck, abs); err == nil && !strings.HasPrefix(rel, string(filepath.Separator)) {
					s.LogRel = rel
				}
			}
		}
		s.LogID, _ = checkpoint.IDOf(f.Log)
	}
	return json.Marshal(s)
}

// LaunchObserver passes a run's progress on to hetsgd launch (a Reporter)
// and, at a restarted job's first step, writes the restart record — the
// failure, the work it lost, the time from the failure to this step — into
// the run log and on stderr.
type LaunchObserver struct {
	engine.Observer
	Reporter *launch.Reporter
	Restart  *launch.Restart // nil: not a restart
	Log      *runlog.Log
	Stderr   io.Writer
	Ranks    int
}

func (o *LaunchObserver) Step(epoch float64, samples int64, trainSeconds, loss float64) {
	o.Observer.Step(epoch, samples, trainSeconds, loss)
	o.Reporter.Step(samples, trainSeconds)
	if r := o.Restart; r != nil {
		o.Restart = nil
		now := time.Now()
		rec := runlog.Restart{Event: "restart", Attempt: r.Attempt, Failure: r.Failure, LostSamples: r.LostSamples,
			LostSeconds: r.LostSeconds, RecoverySeconds: float64(now.UnixNano()-r.FailedAt) / 1e9,
			FailedAt: time.Unix(0, r.FailedAt).UTC().Format(time.RFC3339Nano), FirstStep: now.UTC().Format(time.RFC3339Nano)}
		if o.Ranks > 1 {
			rec.Ranks = o.Ranks
		}
		fmt.Fprintf(o.Stderr, "hetsgd train: restart %d, after the job %s: its first step %.2f s after the failure; %d samples (%.2f s of training) were lost\n",
			rec.Attempt, rec.Failure, rec.RecoverySeconds, rec.LostSamples, rec.LostSeconds)
		o.Log.Write(rec) // a write error ends the run at its next record
	}
}

func (o *LaunchObserver) Warn(w runlog.Warning) {
	if wr, ok := o.Observer.(engine.Warner); ok {
		wr.Warn(w)
	}
}

func (o *LaunchObserver) Checkpointed(samples int64, trainSeconds float64) {
	o.Reporter.Checkpoint(samples, trainSeconds)
}
