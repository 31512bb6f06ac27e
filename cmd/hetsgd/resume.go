package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/runlog"
)

// savedSettings is what hetsgd train saves in its checkpoints (the section
// "settings"): the flags the run was given, in order, the log it wrote and
// its config record.
type savedSettings struct {
	Flags  [][2]string     `json:"flags"`
	Log    string          `json:"log,omitempty"`
	Config json.RawMessage `json:"config"`
}

// mayChange are the flags a resumed run may give other values than the run
// it continues: how long it runs, how often it evaluates and saves, where it
// writes, how it shows progress and how many threads compute — and where
// the data is, when it moved (the data itself must be the same).
var mayChange = []string{"epochs", "time-budget", "eval-every", "eval-points", "log", "force", "progress", "threads", "dashboard",
	"checkpoint", "checkpoint-every", "checkpoint-keep", "resume", "cache", "data", "train", "test", "format"}

// notSaved are flags a checkpoint does not carry over to a resumed run.
var notSaved = []string{"resume", "force", "progress", "config", "print-config", "dashboard"}

// givenFlags lists the flags set on fs, in order, as Set takes them back
// (a repeated flag once per value).
func givenFlags(fs *flag.FlagSet, f *trainFlags) [][2]string {
	var out [][2]string
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case slices.Contains(notSaved, fl.Name):
		case fl.Name == "fault":
			for _, x := range f.faults {
				out = append(out, [2]string{"fault", x.String()})
			}
		default:
			out = append(out, [2]string{fl.Name, fl.Value.String()})
		}
	})
	return out
}

// resumed is a run to continue: its checkpoint, opened, and where it got to.
type resumed struct {
	rd       *checkpoint.Reader
	saved    engine.Saved
	settings savedSettings
	changed  map[string]string // the flags given anew, with their values
}

// resumeFlags opens the checkpoint of --resume and returns the settings of
// the run it holds with args laid over them, refusing a flag that may not
// change (mayChange) and has another value.
func resumeFlags(path string, args []string, stderr io.Writer) (*trainFlags, *flag.FlagSet, *resumed, error) {
	file, err := checkpoint.Latest(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--resume: %w", err)
	}
	rd, err := checkpoint.Open(file)
	if err != nil {
		if prev := checkpoint.Previous(file); prev != "" && errors.Is(err, checkpoint.ErrCorrupt) {
			err = fmt.Errorf("%w; the checkpoint before it is %s (--resume %s)", err, prev, prev)
		}
		return nil, nil, nil, fmt.Errorf("--resume: %w", err)
	}
	fail := func(err error) (*trainFlags, *flag.FlagSet, *resumed, error) {
		rd.Close()
		return nil, nil, nil, err
	}
	saved, raw, err := engine.ReadSaved(rd)
	if err != nil {
		return fail(fmt.Errorf("--resume: %w", err))
	}
	res := &resumed{rd: rd, saved: saved, changed: map[string]string{}}
	if err := json.Unmarshal(raw, &res.settings); err != nil || res.settings.Flags == nil {
		return fail(fmt.Errorf("--resume: %s: its settings are not hetsgd train's (%v)", file, err))
	}
	// The run's own settings, then the same with args over them.
	load := func(extra []string) (*trainFlags, *flag.FlagSet, error) {
		var f trainFlags
		fs := newFlagSet("train", "train [flags]", stderr)
		f.register(fs)
		documentRanges(fs, engine.Ranges)
		for _, kv := range res.settings.Flags {
			if err := fs.Set(kv[0], kv[1]); err != nil {
				return nil, nil, fmt.Errorf("--resume: %s: its setting --%s %q: %v", file, kv[0], kv[1], err)
			}
		}
		if extra != nil {
			if err := parseFlags(fs, extra); err != nil {
				return nil, nil, err
			}
		}
		return &f, fs, nil
	}
	_, before, err := load(nil)
	if err != nil {
		return fail(err)
	}
	f, fs, err := load(args)
	if err != nil {
		return fail(err)
	}
	// The flags given now: those of args.
	given := flag.NewFlagSet("train", flag.ContinueOnError)
	given.SetOutput(io.Discard)
	var scratch trainFlags
	scratch.register(given)
	given.Parse(args)
	var errs []string
	given.Visit(func(fl *flag.Flag) {
		now := fs.Lookup(fl.Name).Value.String()
		if fl.Name != "resume" {
			res.changed[fl.Name] = now
		}
		was := before.Lookup(fl.Name).Value.String()
		if was == now || slices.Contains(mayChange, fl.Name) {
			return
		}
		if was == "" {
			errs = append(errs, fmt.Sprintf("--%s %s: the run of %s was not given it, and a resumed run keeps its settings", fl.Name, now, file))
			return
		}
		errs = append(errs, fmt.Sprintf("--%s %s: the run of %s was given %s, and a resumed run keeps it", fl.Name, now, file, was))
	})
	if len(errs) > 0 {
		var may []string
		for _, m := range mayChange {
			if m != "resume" {
				may = append(may, "--"+m)
			}
		}
		return fail(fmt.Errorf("%s (these may change: %s)", strings.Join(errs, "; "), strings.Join(may, ", ")))
	}
	return f, fs, res, nil
}

// checkSameData refuses data other than the checkpoint run's: its config
// record's counts must be the new run's.
func (res *resumed) checkSameData(rec runlog.Config) error {
	var was runlog.Config
	if err := json.Unmarshal(res.settings.Config, &was); err != nil {
		return fmt.Errorf("--resume: %s: its config record: %w", res.rd.Path(), err)
	}
	type counts struct{ train, test, features, labels int }
	a := counts{was.TrainPoints, was.TestPoints, was.Features, was.Labels}
	b := counts{rec.TrainPoints, rec.TestPoints, rec.Features, rec.Labels}
	if a != b {
		return fmt.Errorf("--data: %s has %d train / %d test points, %d features and %d labels; the run of %s had %d / %d, %d and %d: a resumed run trains on the same data",
			rec.Data, b.train, b.test, b.features, b.labels, res.rd.Path(), a.train, a.test, a.features, a.labels)
	}
	return nil
}

// openLog opens the resumed run's log: the checkpoint run's own, continued
// from the checkpoint's offset, when path is that log (the default); else a
// new file, which starts with the config record. A dashboard (nil: none)
// is shown the continued log's records up to the checkpoint, then every
// record written.
func (res *resumed) openLog(path string, force bool, inputs []string, rec runlog.Config, dash *liveView) (*runlog.Log, error) {
	if path == "" {
		return nil, nil
	}
	var log *runlog.Log
	var err error
	if path == res.settings.Log {
		if _, serr := os.Lstat(path); serr != nil {
			return nil, fmt.Errorf("--log %s: the log of the run to continue: %w (give --log NEW to start a new one)", path, serr)
		}
		if log, err = runlog.AppendLog(path, res.saved.LogOffset, inputs...); err == nil && dash != nil {
			err = dash.publishFile(path, res.saved.LogOffset)
		}
		log.Also(dash.publish)
	} else {
		if log, err = runlog.CreateLog(path, force, inputs...); err == nil {
			log.Also(dash.publish)
			err = log.Write(rec)
		}
	}
	if err == nil {
		err = log.Write(runlog.Resume{Event: "resume", Checkpoint: res.rd.Path(), Samples: res.saved.Samples,
			TrainSeconds: res.saved.TrainSeconds, Changed: res.changed})
	}
	if err != nil {
		log.Close()
		return nil, err
	}
	return log, nil
}
