package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/metric"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"
)

// stopAt says when a test stops a run, as a signal would: after the
// batch that brings it to n batches, in the middle of its n-th
// evaluation, after its n-th merge record, or after its n-th checkpoint
// is written (a signal that arrives while one is written is seen once it
// is whole).
type stopAt struct {
	kind string // "batch", "eval", "merge", "checkpoint"
	n    int
}

func (s stopAt) String() string { return fmt.Sprintf("%s %d", s.kind, s.n) }

// stopper cancels a run's context at a stopAt.
type stopper struct {
	at                       stopAt
	cancel                   context.CancelFunc
	batches, merges, written int
}

func (s *stopper) Step(float64, int64, float64, float64) {
	if s.batches++; s.at.kind == "batch" && s.batches == s.at.n {
		s.cancel()
	}
}

func (s *stopper) Eval(runlog.Eval) {}

func (s *stopper) Checkpointed(int64, float64) {
	if s.written++; s.at.kind == "checkpoint" && s.written == s.at.n {
		s.cancel()
	}
}

func (s *stopper) line(b []byte) {
	if bytes.Contains(b, []byte(`"event":"merge"`)) {
		if s.merges++; s.at.kind == "merge" && s.merges == s.at.n {
			s.cancel()
		}
	}
}

// stoppedEval is an XML workload whose n-th evaluation is cut short by
// its stopper, as a Ctrl-C during a long evaluation is.
type stoppedEval struct {
	*workload.XML
	s     *stopper
	evals int
}

func (w *stoppedEval) EvaluateContext(ctx context.Context, p []float32) (metric.Scores, error) {
	if w.evals++; w.s.at.kind == "eval" && w.evals == w.s.at.n {
		w.s.cancel()
	}
	return w.XML.EvaluateContext(ctx, p)
}

// A virtual-time run stopped by its context at any moment — after a batch,
// during an evaluation, after a merge, after a checkpoint — saves itself
// as it stood, and resumed from that checkpoint it writes what the
// uninterrupted run wrote after it, byte for byte, and ends on the same
// model: 20 moments drawn at random over a strategy of each family.
func TestStoppedRunIsSaved(t *testing.T) {
	w := xml(t, 0.2)
	names := raceSubset([]string{"sync", "elastic", "adaptive", "gem", "crossbow", "diloco", "async-local"}, "sync", "gem")
	moments := 21
	if race.Enabled {
		moments = 6
	}
	rng := rand.New(rand.NewPCG(7, 46))
	type whole struct {
		res      *Result
		log      string
		batches  int
		merges   int
		evals    int
		saves    int
		stopping []stopAt
	}
	runs := map[string]*whole{}
	for _, name := range names {
		cfg := resumeConfig(name)
		cfg.Checkpoint = Checkpointing{Dir: t.TempDir(), Every: 0.25, Keep: 100}
		var buf bytes.Buffer
		counted := &stopper{at: stopAt{kind: "none"}}
		log := runlog.NewLog(&buf)
		log.Also(counted.line)
		res, err := Run(context.Background(), cfg, w, log, counted)
		if err != nil {
			t.Fatal(err)
		}
		runs[name] = &whole{res: res, log: buf.String(), batches: counted.batches, merges: counted.merges,
			evals: len(res.Evals), saves: counted.written}
	}
	// Every strategy is stopped during an evaluation, and after a
	// checkpoint is written; the other moments are drawn.
	for i := range moments {
		name := names[i%len(names)]
		r := runs[name]
		kinds := []string{"batch", "batch", "eval", "checkpoint"}
		if r.merges > 0 {
			kinds = append(kinds, "merge")
		}
		at := stopAt{kind: kinds[rng.IntN(len(kinds))]}
		if i < 2*len(names) {
			at.kind = []string{"eval", "checkpoint"}[i/len(names)]
		}
		switch at.kind {
		case "batch":
			at.n = 1 + rng.IntN(r.batches)
		case "eval":
			at.n = 1 + rng.IntN(r.evals)
		case "merge":
			at.n = 1 + rng.IntN(r.merges)
		case "checkpoint":
			at.n = 1 + rng.IntN(max(1, r.saves-1)) // the last is the run's end
		}
		r.stopping = append(r.stopping, at)
	}
	for _, name := range names {
		r := runs[name]
		t.Run(name, func(t *testing.T) {
			t.Logf("stopped at %v", r.stopping)
			for _, at := range r.stopping {
				cfg := resumeConfig(name)
				cfg.Checkpoint = Checkpointing{Dir: t.TempDir(), Every: 0.25, Keep: 100}
				ctx, cancel := context.WithCancel(context.Background())
				s := &stopper{at: at, cancel: cancel}
				var buf bytes.Buffer
				log := runlog.NewLog(&buf)
				log.Also(s.line)
				res, err := Run(ctx, cfg, &stoppedEval{XML: w, s: s}, log, s)
				cancel()
				if !errors.Is(err, context.Canceled) || res == nil || res.StopCheckpoint == "" {
					t.Fatalf("stopped at %v: %v, saved %q", at, err, res.StopCheckpoint)
				}
				rd, st := savedState(t, res.StopCheckpoint)
				if !bytes.Equal(buf.Bytes()[:st.LogOffset], []byte(r.log[:st.LogOffset])) {
					t.Fatalf("stopped at %v: the log up to the checkpoint differs from the uninterrupted run's", at)
				}
				again := cfg
				again.Checkpoint, again.Resume = Checkpointing{}, rd
				var rest bytes.Buffer
				more, err := Run(context.Background(), again, w, runlog.NewLog(&rest), nil)
				rd.Close()
				if err != nil {
					t.Fatalf("stopped at %v, resumed: %v", at, err)
				}
				if want := r.log[st.LogOffset:]; rest.String() != want {
					t.Fatalf("stopped at %v after %d samples, resumed, the log differs:\n%s\nwant\n%s", at, st.Done, head(rest.String()), head(want))
				}
				last, full := more.Evals[len(more.Evals)-1], r.res.Evals[len(r.res.Evals)-1]
				if !testdata.EqualBits(more.Model, r.res.Model) || more.Samples != r.res.Samples || last != full {
					t.Fatalf("stopped at %v, resumed: model, samples (%d vs %d) or last evaluation (%+v vs %+v) differ", at, more.Samples, r.res.Samples, last, full)
				}
			}
		})
	}
}

// Under the real clock a run stopped at any moment saves itself — once
// the local steps under way are in, when a device computes one — and
// resumed from that checkpoint it goes on to its budget.
func TestStoppedRealRunIsSaved(t *testing.T) {
	w := xml(t, 0)
	for i, name := range raceSubset([]string{"sync", "elastic", "adaptive", "gem"}, "elastic", "gem") {
		cfg := resumeConfig(name)
		cfg.Clock, cfg.Epochs = Real, 1
		cfg.Checkpoint = Checkpointing{Dir: t.TempDir(), Every: 0.25, Keep: 10}
		ctx, cancel := context.WithCancel(context.Background())
		s := &stopper{at: stopAt{kind: "batch", n: 5 + 13*i}, cancel: cancel}
		res, err := Run(ctx, cfg, w, nil, s)
		cancel()
		if !errors.Is(err, context.Canceled) || res.StopCheckpoint == "" {
			t.Fatalf("%s: %v, saved %q", name, err, res.StopCheckpoint)
		}
		if list, _ := checkpoint.Dir(cfg.Checkpoint.Dir).List(); len(list) == 0 || list[len(list)-1] != res.StopCheckpoint {
			t.Fatalf("%s: the folder holds %v; the stop wrote %s", name, list, res.StopCheckpoint)
		}
		rd, st := savedState(t, res.StopCheckpoint)
		if st.Done != res.Samples {
			t.Fatalf("%s: saved at %d samples, stopped at %d", name, st.Done, res.Samples)
		}
		cfg.Resume, cfg.Checkpoint = rd, Checkpointing{}
		more, err := Run(context.Background(), cfg, w, nil, nil)
		rd.Close()
		if err != nil {
			t.Fatalf("%s: resumed: %v", name, err)
		}
		if more.Samples < int64(w.Size()) || len(more.Evals) <= len(st.Evals) {
			t.Fatalf("%s: resumed at %d samples, ended at %d with %d evaluations (%d saved)", name, st.Done, more.Samples, len(more.Evals), len(st.Evals))
		}
	}
}

// Layered SGD's nodes under the real clock run a rank per device in this
// process: a stop reaches every rank's devices, so that none holds it up
// while it decodes a batch (here a second a sample) — on the first rank or
// another, computing or preparing its next batch during an all-reduce.
func TestStopReachesEveryRank(t *testing.T) {
	w := xml(t, 0)
	cfg := base("lsgd", 4, Real)
	cfg.Net.GroupSize, cfg.Prep, cfg.Epochs, cfg.Batch = 2, 1, 1, 256
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg, w, nil, nil)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped: %v", err)
		}
	case <-time.After(2 * time.Minute): // a hang, not a slow machine: unstopped, a batch would take four minutes
		t.Fatal("the stop did not reach the ranks' devices")
	}
}

// A round of batches larger than the training set is refused with the
// figures and the fix; a timing-only run, which computes nothing, is not.
func TestRoundLargerThanTheSet(t *testing.T) {
	w := xml(t, 0)
	cfg := base("sync", 64, Real)
	cfg.Batch = 128
	_, err := Run(context.Background(), cfg, w, nil, nil)
	for _, want := range []string{"Config.Devices 64 × Config.Batch 128 is 8192 samples a round", "4880 training points", "0.5 epochs would be 1 rounds", "at most 76 on 64 devices", "at most 38 at batch 128"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("64 devices of 128 on %d points: %v, want %q", w.Size(), err, want)
		}
	}
	cfg.Batch = 76
	cfg.Epochs = 0.05
	if _, err := Run(context.Background(), cfg, w, nil, nil); err != nil {
		t.Fatalf("64 devices of 76: %v", err)
	}
	cfg = base("lsgd", 256, Virtual)
	cfg.TimingOnly, cfg.Batch = true, 128
	if _, err := Run(context.Background(), cfg, w, nil, nil); err != nil {
		t.Fatalf("timing only: %v", err)
	}
}

// warnings returns the warning records of kind in a log.
func warnings(log, kind string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"event":"warning"`) && strings.Contains(l, `"kind":"`+kind+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// A default rate scaled past what the strategy was validated at is warned
// of at the start, with the figures; a rate of the run's own, or one
// within the range, is not.
func TestScaledRateWarns(t *testing.T) {
	w := xml(t, 0)
	for _, c := range []struct {
		strat   string
		devices int
		batch   int
		lr      float64
		want    string // "" for no warning
	}{
		{"sync", 16, 128, 0, "the learning rate 0.016, sync's default adam scaled to this run (0.001 × devices), is above 0.01"},
		{"sync", 8, 128, 0, ""},
		{"sync", 16, 128, 0.004, ""},
		{"elastic", 2, 512, 0, "the learning rate 0.04, elastic's default adam scaled to this run (0.01 × batch/128), is above 0.0316"},
		{"gem", 2, 64, 0, ""},
	} {
		cfg := base(c.strat, c.devices, Virtual)
		cfg.Optimizer, cfg.Batch, cfg.LR, cfg.Epochs = optim.Config{}, c.batch, c.lr, 0.05
		var buf bytes.Buffer
		if _, err := Run(context.Background(), cfg, w, runlog.NewLog(&buf), nil); err != nil {
			t.Fatal(err)
		}
		got := warnings(buf.String(), "rate")
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s on %d devices of %d: %v", c.strat, c.devices, c.batch, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s on %d devices of %d: %v, want %q", c.strat, c.devices, c.batch, got, c.want)
		}
	}
}

// A run whose loss does not fall over its first evaluations is reported as
// stalled, once; a healthy one, and a diverging one (told so already), are
// not.
func TestStalledRun(t *testing.T) {
	w := xml(t, 0)
	for _, c := range []struct {
		name    string
		lr      float64
		stalled bool
	}{{"a rate too small to move", 1e-9, true}, {"a healthy rate", 0.5, false}, {"a diverging rate", 1e6, false}} {
		cfg := base("sync", 1, Virtual)
		cfg.LR, cfg.Epochs, cfg.EvalEvery = c.lr, 4, 0.5
		var buf bytes.Buffer
		res, err := Run(context.Background(), cfg, w, runlog.NewLog(&buf), nil)
		if err != nil && !errors.Is(err, ErrDiverged) {
			t.Fatal(err)
		}
		got := warnings(buf.String(), "stalled")
		if res.Stalled != c.stalled || len(got) != map[bool]int{true: 1}[c.stalled] {
			t.Fatalf("%s: stalled %v, warnings %v", c.name, res.Stalled, got)
		}
		if c.stalled && !strings.Contains(got[0], "the training loss did not fall") {
			t.Fatalf("%s: %s", c.name, got[0])
		}
	}
}

// One device's batch larger than a small training set is full-batch
// descent, which such a set may want: warned of, not refused.
func TestOneDeviceBatchLargerThanTheSet(t *testing.T) {
	w := xml(t, 0)
	cfg := base("sync", 1, Virtual)
	cfg.Batch, cfg.Epochs = 8192, 2
	var buf bytes.Buffer
	if _, err := Run(context.Background(), cfg, w, runlog.NewLog(&buf), nil); err != nil {
		t.Fatal(err)
	}
	got := warnings(buf.String(), "batch")
	if len(got) != 1 || !strings.Contains(got[0], "the batch of 8192 is larger than the 4880 training points: every step holds the whole set, and 2 epochs would be 2 steps") {
		t.Fatalf("warnings %v", got)
	}
}
