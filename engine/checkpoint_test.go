package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/runlog"
)

// savedState reads the engine's books of a checkpoint.
func savedState(t *testing.T, path string) (*checkpoint.Reader, engineState) {
	t.Helper()
	rd, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readState(rd)
	if err != nil {
		t.Fatal(err)
	}
	return rd, *st
}

// resumeConfig is a 4-device heterogeneous virtual run of strategy name,
// with noise, dropout's streams and each family's state in play.
func resumeConfig(name string) Config {
	cfg := base(name, 4, Virtual)
	cfg.Speeds = []float64{1, 0.9, 0.8, 0.68}
	cfg.Noise = 0.1
	cfg.Epochs, cfg.EvalEvery = 1.5, 0.2
	cfg.Optimizer, cfg.LR = optim.Config{Name: "adam"}, 0.004
	switch name {
	case "gem", "downpour":
		cfg.Optimizer, cfg.LR = optim.Config{Name: "sgd"}, 0.2
	case "elastic", "crossbow":
		cfg.Optimizer = optim.Config{Name: "momentum"}
		cfg.LR = 0.05
		if name == "elastic" {
			cfg.Options = map[string]float64{"k": 5}
		}
	case "adaptive":
		cfg.Options = map[string]float64{"mega-batch": 10}
	}
	return cfg
}

// A virtual-time run continued from any of its checkpoints writes what the
// uninterrupted run wrote after that checkpoint, byte for byte, and ends on
// the same model: for a strategy of each family (gradient aggregation,
// model averaging with and without the centre's momentum, CROSSBOW's
// centre, parameter servers, AdaCons), with a device crashing half-way in
// one of them.
func TestResumeIsTheSameRun(t *testing.T) {
	virtualOnly(t)
	w := xml(t, 0.2)
	for _, name := range []string{"sync", "elastic", "adaptive", "crossbow", "gem", "adacons", "adaptive+crash"} {
		t.Run(name, func(t *testing.T) {
			strat, crash := strings.CutSuffix(name, "+crash")
			cfg := resumeConfig(strat)
			if crash {
				probe, err := Run(context.Background(), cfg, w, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				T := probe.TrainSeconds
				cfg.Faults = []Fault{{Device: 2, At: 0.3 * T, Kind: Crash}, {Device: 1, At: 0.5 * T, Kind: Slow, Factor: 3}}
			}
			dir := t.TempDir()
			cfg.Checkpoint = Checkpointing{Dir: dir, Every: 0.25, Keep: 100}
			var whole bytes.Buffer
			full, err := Run(context.Background(), cfg, w, runlog.NewLog(&whole), nil)
			if err != nil {
				t.Fatal(err)
			}
			if crash && len(full.Faults) < 2 {
				t.Fatalf("the faults did not strike: %+v", full.Faults)
			}
			list, err := checkpoint.Dir(dir).List()
			if err != nil || len(list) < 5 {
				t.Fatalf("%d checkpoints (%v), want one every quarter epoch and the last", len(list), err)
			}
			for _, path := range list[:len(list)-1] {
				rd, st := savedState(t, path)
				again := cfg
				again.Checkpoint = Checkpointing{}
				again.Resume = rd
				var rest bytes.Buffer
				res, err := Run(context.Background(), again, w, runlog.NewLog(&rest), nil)
				rd.Close()
				if err != nil {
					t.Fatalf("resuming from %s: %v", path, err)
				}
				if want := whole.String()[st.LogOffset:]; rest.String() != want {
					t.Fatalf("resumed from the checkpoint after %d samples, the log differs:\n%s\nwant\n%s", st.Done, head(rest.String()), head(want))
				}
				if !testdata.EqualBits(res.Model, full.Model) || res.Samples != full.Samples || len(res.Evals) != len(full.Evals) {
					t.Fatalf("resumed after %d samples: model, samples (%d vs %d) or evaluations (%d vs %d) differ", st.Done, res.Samples, full.Samples, len(res.Evals), len(full.Evals))
				}
			}
		})
	}
}

func head(s string) string {
	if len(s) > 800 {
		return s[:800] + "…"
	}
	return s
}

// A finished run's last checkpoint continues into a longer run: the
// dispatches its budget refused are asked for again.
func TestResumeFinishedRunGoesFurther(t *testing.T) {
	w := xml(t, 0)
	for _, clock := range []Clock{Virtual, Real} {
		for _, name := range []string{"sync", "adaptive", "gem"} {
			cfg := resumeConfig(name)
			cfg.Clock, cfg.Epochs = clock, 0.5
			dir := t.TempDir()
			cfg.Checkpoint = Checkpointing{Dir: dir, Keep: 100}
			first, err := Run(context.Background(), cfg, w, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			list, _ := checkpoint.Dir(dir).List()
			if len(list) != 1 {
				t.Fatalf("%s %s: checkpoints %v, want the last one only (--checkpoint-every 0)", name, clock, list)
			}
			rd, err := checkpoint.Open(list[0])
			if err != nil {
				t.Fatal(err)
			}
			// Checkpoints only at the end again, into the same folder.
			cfg.Resume, cfg.Epochs = rd, 1
			more, err := Run(context.Background(), cfg, w, nil, nil)
			rd.Close()
			if err != nil {
				t.Fatalf("%s %s: %v", name, clock, err)
			}
			if list, _ := checkpoint.Dir(dir).List(); len(list) != 2 {
				t.Fatalf("%s %s: after the longer run the folder holds %v, want the two ends' checkpoints", name, clock, list)
			}
			last := more.Evals[len(more.Evals)-1]
			if more.Samples < int64(w.Size()) || last.Samples <= first.Samples || len(more.Evals) <= len(first.Evals) {
				t.Fatalf("%s %s: the longer run stopped at %d samples (first run %d), last evaluation at %d", name, clock, more.Samples, first.Samples, last.Samples)
			}
		}
	}
}

// Under the real clock nothing is lost: a resumed run goes on from the
// checkpoint's sample count, its evaluations after the checkpoint's.
func TestResumeRealClock(t *testing.T) {
	w := xml(t, 0)
	for _, name := range []string{"sync", "elastic", "gem"} {
		cfg := resumeConfig(name)
		cfg.Clock, cfg.Epochs = Real, 1
		dir := t.TempDir()
		cfg.Checkpoint = Checkpointing{Dir: dir, Every: 0.25, Keep: 10}
		if _, err := Run(context.Background(), cfg, w, nil, nil); err != nil {
			t.Fatal(err)
		}
		list, _ := checkpoint.Dir(dir).List()
		if len(list) < 3 {
			t.Fatalf("%s: checkpoints %v", name, list)
		}
		rd, st := savedState(t, list[1])
		cfg.Resume, cfg.Checkpoint = rd, Checkpointing{}
		res, err := Run(context.Background(), cfg, w, nil, nil)
		rd.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Evals) <= len(st.Evals) || res.Evals[len(st.Evals)].Samples <= st.Done || res.Samples < int64(w.Size()) {
			t.Fatalf("%s: resumed at %d samples with %d evaluations; ended at %d with %d", name, st.Done, len(st.Evals), res.Samples, len(res.Evals))
		}
		if res.TrainSeconds < st.Now {
			t.Fatalf("%s: the clock went back: %g s at the checkpoint, %g at the end", name, st.Now, res.TrainSeconds)
		}
	}
}

// A resumed run keeps the settings of the run it continues: changing one
// that may not change is an error naming it; the number of epochs, the
// evaluation and checkpoint cadence may change.
func TestResumeRefusesOtherSettings(t *testing.T) {
	w := xml(t, 0)
	cfg := resumeConfig("elastic")
	cfg.Epochs = 0.3
	dir := t.TempDir()
	cfg.Checkpoint = Checkpointing{Dir: dir}
	if _, err := Run(context.Background(), cfg, w, nil, nil); err != nil {
		t.Fatal(err)
	}
	path, err := checkpoint.Latest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.LR = 0.1 }, "Config.LR is 0.05"},
		{func(c *Config) { c.Strategy, c.Options = "crossbow", nil }, "Config.Strategy is elastic"},
		{func(c *Config) { c.Seed = 9 }, "Config.Seed"},
		{func(c *Config) { c.Options = map[string]float64{"k": 3} }, "Config.Options"},
		{func(c *Config) { c.Speeds = nil }, "Config.Speeds"},
		{func(c *Config) { c.Clock = Real }, "Config.Clock is virtual"},
		{func(c *Config) { c.Epochs, c.EvalEvery = 0.6, 0.05 }, ""},
	} {
		rd, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		again := cfg
		again.Checkpoint = Checkpointing{}
		again.Resume = rd
		c.change(&again)
		_, err = Run(context.Background(), again, w, nil, nil)
		rd.Close()
		if c.want == "" {
			if err != nil {
				t.Errorf("a longer run with another evaluation cadence: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v, want an error naming %q and the checkpoint", err, c.want)
		}
	}
}

// A run resumed on another number of devices (restoreResized) goes on from
// its model: every new device starts from the model the run evaluates, with
// the optimizer state of the checkpoint's first device, and the run keeps
// its samples and evaluations; it learns on, fewer devices and more, for a
// strategy of each family.
func TestResumeOnOtherDevices(t *testing.T) {
	virtualOnly(t)
	w := xml(t, 0.2)
	for _, name := range []string{"sync", "elastic", "adaptive", "crossbow", "gem", "adacons", "lsgd"} {
		for _, devices := range []int{2, 6} {
			cfg := resumeConfig(name)
			cfg.Speeds = nil
			dir := t.TempDir()
			cfg.Checkpoint = Checkpointing{Dir: dir, Every: 0.5}
			first, err := Run(context.Background(), cfg, w, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			latest, err := checkpoint.Latest(dir)
			if err != nil {
				t.Fatal(err)
			}
			rd, st := savedState(t, latest)
			model := make([]float32, w.NumParams())
			if err := rd.Float32s(st.Model, model); err != nil {
				t.Fatal(err)
			}
			again := cfg
			again.Devices, again.Epochs, again.Resume = devices, 3, rd
			r, err := newRun(again, w, nil, nil) // restored, not run
			if err != nil {
				t.Fatalf("%s on %d devices: %v", name, devices, err)
			}
			for _, d := range r.job.(execJob).x.devs {
				if !equal(d.p, model) {
					t.Fatalf("%s on %d devices: device %d does not start from the run's model", name, devices, d.id)
				}
			}
			if r.done != st.Done || len(r.res.Evals) != len(first.Evals) {
				t.Fatalf("%s on %d devices: %d samples and %d evaluations, the checkpoint's %d and %d", name, devices, r.done, len(r.res.Evals), st.Done, len(first.Evals))
			}
			r.job.(execJob).x.close()
			res, err := Run(context.Background(), again, w, nil, nil)
			rd.Close()
			if err != nil {
				t.Fatalf("%s resumed on %d devices: %v", name, devices, err)
			}
			before, after := first.Evals[len(first.Evals)-1], res.Evals[len(res.Evals)-1]
			if res.Samples < int64(2.9*float64(w.Size())) || !(after.P1 >= before.P1-0.02) {
				t.Errorf("%s resumed on %d devices: %d samples, P@1 %.4f after, %.4f at the checkpoint", name, devices, res.Samples, after.P1, before.P1)
			}
		}
	}
}
