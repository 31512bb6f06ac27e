package engine

import (
	"bytes"
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/metric"
)

var soak = flag.Duration("soak", 0, "run TestSoak for this long per strategy family (e.g. 30m); 0 skips it")

// TestSoak trains each family of strategy again and again for -soak under
// the real clock, each run with a random fault (a crash or a stall of a
// random device at a random time, and a random slow-down): the heap and the
// goroutines stay flat, every record reaches the log, and the final P@1
// stays within noise of a clean run. It is not part of CI:
//
//	go test ./engine -run TestSoak -soak 30m -timeout 3h
func TestSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("run with -soak DURATION")
	}
	w := xml(t, 0)
	goroutines := runtime.NumGoroutine()
	for _, strat := range []string{"sync", "elastic", "adaptive", "gem"} {
		cfg := base(strat, 4, Real)
		cfg.Epochs, cfg.EvalEvery = 2, 0.5
		clean, err := Run(context.Background(), cfg, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := clean.Evals[len(clean.Evals)-1].P1
		rng := rand.New(rand.NewPCG(uint64(len(strat)), 7))
		var heaps []uint64
		var ms runtime.MemStats
		runs := 0
		for end := time.Now().Add(*soak); time.Now().Before(end); runs++ {
			kind := []FaultKind{Crash, Stall}[rng.IntN(2)]
			f := Fault{Device: rng.IntN(4), At: rng.Float64() * clean.TrainSeconds, Kind: kind}
			if kind == Stall {
				f.Timeout = clean.TrainSeconds / 10
			}
			slow := Fault{Device: rng.IntN(4), At: rng.Float64() * clean.TrainSeconds, Kind: Slow, Factor: 1 + 3*rng.Float64()}
			cfg.Faults = []Fault{f, slow}
			var buf bytes.Buffer
			res, err := Run(context.Background(), cfg, w, metric.NewLog(&buf), nil)
			if err != nil {
				t.Fatalf("%s, run %d, faults %v: %v", strat, runs, cfg.Faults, err)
			}
			records := strings.Count(buf.String(), "\n")
			if wantRecords := len(res.Evals) + len(res.Merges) + len(res.Async) + len(res.Faults) + res.Notes; records != wantRecords {
				t.Errorf("%s, run %d: %d log records, want %d", strat, runs, records, wantRecords)
			}
			// Two real-clock epochs of the small test model are noisy, and a
			// device lost near the end takes its share of the samples with
			// it: GEM with a stall and a 4× slow-down ended 0.058 below.
			if got := res.Evals[len(res.Evals)-1].P1; math.Abs(got-want) > 0.1 {
				t.Errorf("%s, run %d, faults %v: final P@1 %.4f, clean %.4f", strat, runs, cfg.Faults, got, want)
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heaps = append(heaps, ms.HeapAlloc)
		}
		q := max(1, len(heaps)/4)
		first, last := slices.Max(heaps[:q]), slices.Max(heaps[len(heaps)-q:])
		t.Logf("%s: %d runs; heap %.1f MiB in the first quarter, %.1f MiB in the last", strat, runs, float64(first)/(1<<20), float64(last)/(1<<20))
		if float64(last) > 1.2*float64(first)+4<<20 {
			t.Errorf("%s: the heap grew from %d to %d bytes over %d runs", strat, first, last, runs)
		}
	}
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		t.Errorf("%d goroutines after the soak, %d before", g, goroutines)
	}
}
