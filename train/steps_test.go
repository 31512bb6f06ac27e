package train_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/train"
)

func parsed(t *testing.T, args ...string) (*train.Settings, *flag.FlagSet) {
	t.Helper()
	var s train.Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &s, fs
}

// Run's first step turns the settings into the run's configuration, the
// strategy's defaults filled in, reading and writing nothing; bad values
// are refused there, naming the flag.
func TestPlan(t *testing.T) {
	s, fs := parsed(t, "--strategy", "streaming-diloco", "--devices", "4", "--streaming-diloco.bits", "4")
	var warn bytes.Buffer
	p, err := train.Plan(s, fs, nil, comm.Self(), &warn)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Config; c.Strategy != "streaming-diloco" || c.Devices != 4 || c.LR != p.Strategy.Defaults.LR || c.Options["bits"] != 4 || c.Resume != nil {
		t.Fatalf("config %+v", c)
	}
	if len(p.Given) != 3 || warn.Len() != 0 {
		t.Fatalf("given %v, warnings %q", p.Given, warn.String())
	}
	for _, c := range []struct{ args, want string }{
		{"--precision fp16", "--precision"},
		{"--format csv", "csv"},
		{"--strategy streaming-diloco --streaming-diloco.bits 8", "bits 8"},
		{"--strategy nope", "nope"},
	} {
		s, fs := parsed(t, strings.Fields(c.args)...)
		if _, err := train.Plan(s, fs, nil, comm.Self(), io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.args, err, c.want)
		}
	}
}

// Run's last step writes the done record and says how the run ended: an
// engine's error in the record and returned, a stop by a signal as
// ErrInterrupted, a run that never updated its evaluated model as an
// error, and a finished one's best P@1.
func TestReport(t *testing.T) {
	evals := []runlog.Eval{{Epoch: 1, TrainSeconds: 2, Fields: metric.Fields{P1: 0.5}}}
	ran := train.Ran{Config: engine.Config{Strategy: "elastic", Clock: engine.Virtual}, Points: 100, XML: true}
	failed := errors.New("disk full")
	for _, c := range []struct {
		name              string
		res               *engine.Result
		err               error
		wantErr, wantDone string
		wantOut           string
	}{
		{"done", &engine.Result{Evals: evals, Samples: 300}, nil, "", `"interrupted":false`, "best P@1 0.5000"},
		{"failed", &engine.Result{Evals: evals}, failed, "disk full", `"error":"disk full"`, ""},
		{"failed before training", nil, failed, "disk full", "", ""},
		{"stopped before training", nil, context.Canceled, "context canceled", "", ""},
		{"interrupted", &engine.Result{Evals: evals, Samples: 40}, context.Canceled, "interrupted after 40 samples", `"interrupted":true`, "best P@1"},
		{"untrained", &engine.Result{Evals: evals, Samples: 40, Untrained: true}, nil, "before any update reached the model", "before any update reached", ""},
	} {
		var out, logged bytes.Buffer
		front := train.Front{Stdout: &out, Stderr: io.Discard, Message: func(err error) string { return err.Error() }}
		err := train.Report(front, runlog.NewLog(&logged), c.res, c.err, ran)
		if got := fmt.Sprint(err); c.wantErr == "" && err != nil || c.wantErr != "" && !strings.Contains(got, c.wantErr) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
		}
		if c.wantErr == "interrupted after 40 samples" && !errors.Is(err, train.ErrInterrupted) {
			t.Errorf("%s: %v is not ErrInterrupted", c.name, err)
		}
		if c.wantDone == "" && logged.Len() != 0 || c.wantDone != "" && (!strings.Contains(logged.String(), `"event":"done"`) || !strings.Contains(logged.String(), c.wantDone)) {
			t.Errorf("%s: logged %q, want a done record with %q", c.name, logged.String(), c.wantDone)
		}
		if !strings.Contains(out.String(), c.wantOut) {
			t.Errorf("%s: printed %q, want %q", c.name, out.String(), c.wantOut)
		}
	}
}
