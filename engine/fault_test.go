package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/runlog"
)

func TestParseFault(t *testing.T) {
	for s, want := range map[string]Fault{
		"device=2,at=30s,kind=crash":           {Device: 2, At: 30, Kind: Crash},
		"device=0,at=1.5,kind=stall,timeout=3": {Device: 0, At: 1.5, Kind: Stall, Timeout: 3},
		"kind=slow=4,at=0s,device=1":           {Device: 1, At: 0, Kind: Slow, Factor: 4},
	} {
		got, err := ParseFault(s)
		if err != nil || got != want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		if back, err := ParseFault(got.String()); err != nil || back != got {
			t.Errorf("%q does not read back: %+v, %v", got.String(), back, err)
		}
	}
	for _, s := range []string{"", "device=2", "device=x,at=1,kind=crash", "device=1,at=1,kind=crash,color=red", "device=1 at=1"} {
		if _, err := ParseFault(s); err == nil || !strings.Contains(err.Error(), "Config.Faults") {
			t.Errorf("ParseFault(%q): %v", s, err)
		}
	}
	for _, c := range []struct {
		f   Fault
		msg string
	}{
		{Fault{Device: 4, At: 1, Kind: Crash}, "no device 4 among 4"},
		{Fault{Device: 1, At: math.Inf(1), Kind: Crash}, "at=+Inf"},
		{Fault{Device: 1, At: 1, Kind: Slow, Factor: 0.5}, "slow=0.5"},
		{Fault{Device: 1, At: 1, Kind: "melt"}, `kind "melt"`},
		{Fault{Device: 1, At: 1, Kind: Crash, Timeout: 2}, "only kind=stall takes a timeout"},
	} {
		cfg := base("sync", 4, Virtual)
		cfg.Faults = []Fault{c.f}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.msg)
		}
	}
	cfg := base("sync", 2, Virtual)
	cfg.Faults = []Fault{{Device: 0, At: 1, Kind: Crash}, {Device: 1, At: 2, Kind: Stall}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "at least one must remain") {
		t.Errorf("every device leaving: %v", err)
	}
}

// A device that crashes or stalls leaves the run and the others finish the
// budget, under both clocks and for every family of strategy; the
// departure is logged once, at the crash or at the end of the stall's
// timeout; the virtual clock repeats a run with faults exactly.
func TestFaultsLeaveTheRun(t *testing.T) {
	virtualOnly(t)
	w := xml(t, 0)
	for _, strat := range []string{"sync", "elastic", "crossbow", "adaptive", "adacons", "gem"} {
		for _, kind := range []FaultKind{Crash, Stall} {
			cfg := base(strat, 4, Virtual)
			cfg.Epochs, cfg.EvalEvery = 2, 1
			clean, err := Run(context.Background(), cfg, w, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A third of the way in; a stall is given up on a tenth later.
			f := Fault{Device: 2, At: clean.TrainSeconds / 3, Kind: kind}
			if kind == Stall {
				f.Timeout = clean.TrainSeconds / 10
			}
			cfg.Faults = []Fault{f}
			res, err := Run(context.Background(), cfg, w, nil, nil)
			if err != nil {
				t.Fatalf("%s, %s: %v", strat, kind, err)
			}
			var left []runlog.Fault
			for _, e := range res.Faults {
				if e.Left {
					left = append(left, e)
				}
			}
			want := f.At + f.Timeout
			if len(left) != 1 || left[0].Device != 2 || left[0].Live != 3 || math.Abs(left[0].Time-want) > 1e-12 {
				t.Errorf("%s, %s: departures %+v, want device 2 at %g", strat, kind, left, want)
			}
			// The lost batch is the only shortfall: the run goes on.
			budget := int64(math.Ceil(cfg.Epochs * float64(w.Size())))
			if res.Samples < budget-2*int64(cfg.Batch)*4 {
				t.Errorf("%s, %s: %d of %d samples trained", strat, kind, res.Samples, budget)
			}
			if last := res.Evals[len(res.Evals)-1]; !(last.P1 > 0.1) {
				t.Errorf("%s, %s: P@1 %.3f after the fault", strat, kind, last.P1)
			}
			again, _ := Run(context.Background(), cfg, w, nil, nil)
			if !slices.Equal(res.Model, again.Model) {
				t.Errorf("%s, %s: a virtual run with a fault is not repeated exactly", strat, kind)
			}
		}
	}
}

// Under the real clock a crash takes the device out too, and a slowed
// device does fewer of an asynchronous run's batches.
func TestFaultsRealClock(t *testing.T) {
	w := xml(t, 0)
	cfg := base("elastic", 3, Real)
	cfg.Epochs = 1
	cfg.Faults = []Fault{{Device: 1, At: 0, Kind: Crash}}
	res, err := Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 1 || !res.Faults[0].Left || res.Samples < int64(w.Size())-int64(2*cfg.Batch) {
		t.Errorf("faults %+v, %d samples", res.Faults, res.Samples)
	}
}

// A slowed device takes longer over its batches: the same samples take
// longer to train with one of two devices 4× slower (1.6× under a parameter
// server, where the other device takes on more of them).
func TestSlowFault(t *testing.T) {
	w := xml(t, 0)
	seconds := func(faults []Fault) float64 {
		cfg := base("downpour", 2, Virtual)
		cfg.Epochs, cfg.Noise, cfg.Faults = 1, 0, faults
		res, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.TrainSeconds
	}
	clean, slow := seconds(nil), seconds([]Fault{{Device: 1, At: 0, Kind: Slow, Factor: 4}})
	if r := slow / clean; !(r > 1.4 && r < 1.8) {
		t.Errorf("a device 4× slower: %.3g s of training against %.3g s clean (×%.2f, want about 1.6)", slow, clean, r)
	}
}

// When device 0 leaves a strategy that evaluates replica 0, a replica still
// in the run is evaluated: the score goes on improving with training.
func TestReplicaZeroLeaves(t *testing.T) {
	w := xml(t, 0)
	cfg := base("sync", 4, Virtual)
	cfg.Epochs, cfg.EvalEvery = 3, 0.5
	clean, err := Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = []Fault{{Device: 0, At: clean.TrainSeconds / 4, Kind: Crash}}
	res, err := Run(context.Background(), cfg, w, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, want := res.Evals[len(res.Evals)-1].P1, clean.Evals[len(clean.Evals)-1].P1
	if math.Abs(got-want) > 0.05 {
		t.Errorf("sync after device 0 left: final P@1 %.4f, clean run %.4f", got, want)
	}
}

// A run stopped while a device is slowed a millionfold ends at once: the
// device's slow-down (here a year or more for one batch of 32 rows, each
// decoded in a simulated second) is cut short, not waited out. The bound only catches that wait
// (testdata.Hang): the test does not time the stop.
func TestStopCutsSlowDown(t *testing.T) {
	for _, strat := range []string{"sync", "elastic", "gem"} {
		cfg := base(strat, 2, Real)
		cfg.Epochs = 1000
		cfg.Prep = 1 // a second of simulated decoding a row: cut short too
		cfg.Faults = []Fault{{Device: 1, At: 0, Kind: Slow, Factor: 1e6}}
		ctx, cancel := context.WithCancel(context.Background())
		obs := &cancelAfter{n: 1, cancel: cancel}
		go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		start := time.Now()
		_, err := Run(ctx, cfg, xml(t, 0), nil, obs)
		if err != context.Canceled {
			t.Fatalf("%s: error %v, want context.Canceled", strat, err)
		}
		if d := time.Since(start); d > testdata.Hang {
			t.Errorf("%s: a run with a device slowed a millionfold took %v to stop", strat, d)
		}
	}
}

// The loss watch: a loss a hundredfold its first batch's is diverging,
// once; one that only rose, or fell, is not.
func TestLossWatch(t *testing.T) {
	for _, c := range []struct {
		losses []float64
		warned bool
	}{
		{[]float64{5, 4, 3, 2, 1, 0.5}, false},
		{[]float64{5, 6, 8, 12, 20, 30, 40}, false},
		{append([]float64{5}, repeat(1e4, 40)...), true},
		{[]float64{0, 1e9, 1e9}, false}, // a first loss of 0 is no reference: the next batch's is
	} {
		var w lossWatch
		warned := 0
		for _, l := range c.losses {
			if w.add(l) {
				warned++
			}
		}
		if (warned == 1) != c.warned || warned > 1 {
			t.Errorf("losses %v: warned %d times, want %v", c.losses, warned, c.warned)
		}
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
