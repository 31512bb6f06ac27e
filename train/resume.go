package train

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/runlog"
)

// savedSettings is what hetsgd train saves in its checkpoints (the section
// "settings"): the flags the run was given, in order, the log it wrote and
// its config record; the run's id (its checkpoint folder's owner); and
// where its log is — absolute, relative to the checkpoint folder, and the
// file's identity — so that a resumed run finds its log from wherever it is
// started, and a copy of the folder is not taken for the folder itself (see
// Resumed.Place).
type savedSettings struct {
	Flags  [][2]string     `json:"flags"`
	Log    string          `json:"log,omitempty"`
	Config json.RawMessage `json:"config"`
	Run    string          `json:"run,omitempty"`
	// LogAbs and LogRel are the log's path, absolute and relative to the
	// checkpoint folder; LogID its identity (a regular file's).
	LogAbs string             `json:"log_abs,omitempty"`
	LogRel string             `json:"log_rel,omitempty"`
	LogID  *checkpoint.FileID `json:"log_id,omitempty"`
}

// Given lists the flags set on fs, in order, as Set takes them back
// (a repeated flag once per value).
func Given(fs *flag.FlagSet, f *Settings) [][2]string {
	var out [][2]string
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case slices.Contains(notSaved, fl.Name):
		case fl.Name == "fault":
			for _, x := range f.Faults {
				// A rank's fault struck the job that was saved: a resumed
				// job goes on without it (engine.Config.RankFaults).
				if !x.OnRank {
					out = append(out, [2]string{"fault", x.String()})
				}
			}
		case slices.Contains(inputPathFlags, fl.Name) && fl.Value.String() != "":
			// Saved absolute, so that a run resumed from another folder
			// finds its inputs.
			v := fl.Value.String()
			if abs, err := filepath.Abs(v); err == nil && !strings.HasPrefix(v, "bundled:") {
				v = abs
			}
			out = append(out, [2]string{fl.Name, v})
		default:
			out = append(out, [2]string{fl.Name, fl.Value.String()})
		}
	})
	return out
}

// Resumed is a run to continue: its checkpoint, opened, and where it got to.
type Resumed struct {
	rd       *checkpoint.Reader
	saved    engine.Saved
	settings savedSettings
	changed  map[string]string // the flags given anew, with their values
	given    map[string]bool   // the flags given anew
	// What place decided: the run's id, the checkpoint it branched off
	// (when it is a new run: from a copy of its folder, or into another
	// folder), whether it continues its own log, and whether its
	// checkpoint folder is the one it resumes from.
	run         string
	from        string
	continueLog bool
	sameFolder  bool
}

// Resume opens the checkpoint of --resume and returns the settings of
// the run it holds with args laid over them, refusing a flag that may not
// change (Decl.MayChange) and has another value. newFlagSet and parse are
// the front end's: a flag set for the settings (Register adds them), and
// how it parses args onto one, reporting its errors.
func Resume(path string, args []string, newFlagSet func() *flag.FlagSet, parse func(*flag.FlagSet, []string) error) (*Settings, *flag.FlagSet, *Resumed, error) {
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
	fail := func(err error) (*Settings, *flag.FlagSet, *Resumed, error) {
		rd.Close()
		return nil, nil, nil, err
	}
	saved, raw, err := engine.ReadSaved(rd)
	if err != nil {
		return fail(fmt.Errorf("--resume: %w", err))
	}
	res := &Resumed{rd: rd, saved: saved, changed: map[string]string{}, given: map[string]bool{}}
	if err := json.Unmarshal(raw, &res.settings); err != nil {
		return fail(fmt.Errorf("--resume: %s: its settings section is not hetsgd train's: %v", file, err))
	}
	if res.settings.Flags == nil || res.settings.Config == nil {
		return fail(fmt.Errorf("--resume: %s: its settings section is not hetsgd train's: it holds no flags or no config record", file))
	}
	var rec runlog.Config
	if err := json.Unmarshal(res.settings.Config, &rec); err != nil {
		return fail(fmt.Errorf("--resume: %s: the config record in its settings section: %v", file, err))
	}
	wasGiven := map[string]bool{}
	for _, kv := range res.settings.Flags {
		wasGiven[kv[0]] = true
	}
	// The run's own settings, then the same with args over them.
	load := func(extra []string) (*Settings, *flag.FlagSet, error) {
		var f Settings
		fs := newFlagSet()
		f.Register(fs)
		for _, kv := range res.settings.Flags {
			if err := fs.Set(kv[0], kv[1]); err != nil {
				return nil, nil, fmt.Errorf("--resume: %s: its setting --%s %q: %v", file, kv[0], kv[1], err)
			}
		}
		if extra != nil {
			if err := parse(fs, extra); err != nil {
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
	var scratch Settings
	scratch.Register(given)
	given.Parse(args)
	var errs []string
	given.Visit(func(fl *flag.Flag) {
		res.given[fl.Name] = true
		now := fs.Lookup(fl.Name).Value.String()
		if fl.Name != "resume" {
			res.changed[fl.Name] = now
		}
		was := before.Lookup(fl.Name).Value.String()
		if was == now || slices.Contains(mayChange, fl.Name) {
			return
		}
		if !wasGiven[fl.Name] {
			// What the run used: its effective setting, as its config
			// record holds it (a default, or derived from others).
			used := "its default"
			if v, ok := rec.Settings.Lookup(fl.Name); ok {
				used = fmt.Sprintf("its default, %s", runlog.YAMLScalar(v))
			} else if was != "" {
				used = fmt.Sprintf("its default, %s", was)
			}
			errs = append(errs, fmt.Sprintf("--%s %s: the run of %s used %s, and a resumed run keeps its settings", fl.Name, now, file, used))
			return
		}
		errs = append(errs, fmt.Sprintf("--%s %s: the run of %s was given %s, and a resumed run keeps it", fl.Name, now, file, was))
	})
	// The run's devices, unless given anew: then the run goes on from its
	// model on as many (engine's restoreResized).
	f.resumedDevices = rec.Devices
	if res.given["devices"] {
		f.resumedDevices = f.Devices
	} else if res.given["devices-per-rank"] {
		f.resumedDevices = -f.DevicesPerRank // per rank: the ranks are known later
	}
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

// Reader is the checkpoint being resumed, open.
func (res *Resumed) Reader() *checkpoint.Reader { return res.rd }

// Close closes the checkpoint.
func (res *Resumed) Close() error { return res.rd.Close() }

// Saved is where the run got to when it was saved.
func (res *Resumed) Saved() engine.Saved { return res.saved }

// Run is the resumed run's id, as Place decided: the saved run's when it
// continues, a new one when it branches off.
func (res *Resumed) Run() string { return res.run }

// From is, for a run that branches off, the checkpoint it began at (""
// when it continues its own run), and whether its checkpoint folder is the
// one it resumes from (checkpoint.Dir.Claim's adopt).
func (res *Resumed) From() (string, bool) { return res.from, res.sameFolder }

// CheckSameData refuses data other than the checkpoint run's: its config
// record's counts must be the new run's.
func (res *Resumed) CheckSameData(rec runlog.Config) error {
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
	if was.DataDigest != "" && rec.DataDigest != was.DataDigest {
		return fmt.Errorf("--data: %s is not the data the run of %s trained on: the same counts, but other content (its digest %.12s…, the run's %.12s…); was it changed in place? A resumed run trains on the same data",
			rec.Data, res.rd.Path(), rec.DataDigest, was.DataDigest)
	}
	return nil
}

// Place decides where the resumed run writes, by these rules:
//
//   - Its checkpoints go into the folder of the checkpoint it resumes
//     (found from the checkpoint's own location, not from the path the run
//     was given where it started), unless --checkpoint names another.
//   - It is the same run, continuing, when it writes into that folder and
//     the folder is the run's own. It is a new run, branching off, when
//     the folder is a copy of the run's (checkpoint.Owner.Copied) or when
//     --checkpoint names another folder: a new id, and a record of the
//     checkpoint it began at. Resuming from a checkpoint older than the
//     newest readable one of its folder, into that folder, is refused:
//     the newer ones would outlive the resumed run's own.
//   - Its log is the run's own (found through its absolute path from the
//     run's own folder, else relative to the checkpoint's folder, as a copy
//     of a run's folder and log is found) unless --log names another. A new
//     run never writes into the log file of the run it branches off: that
//     needs --log NEW. A log is continued only where it holds, byte for
//     byte, what the checkpoint counted (runlog.AppendLog checks).
func (res *Resumed) Place(f *Settings) error {
	file := res.rd.Path()
	own := filepath.Dir(file)
	if !res.given["checkpoint"] {
		f.Checkpoint = own
	}
	owner, hasOwner, err := checkpoint.Dir(own).Owner()
	if err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	// A copy, or a folder whose copy was resumed in place (its record then
	// names a run of its own, the checkpoint another).
	copied := hasOwner && (owner.Copied(checkpoint.Dir(own)) || res.settings.Run != "" && owner.Run != res.settings.Run)
	res.sameFolder = atomicfile.SameFile(f.Checkpoint, own)
	res.run = res.settings.Run
	if res.run == "" && hasOwner {
		res.run = owner.Run
	}
	if res.sameFolder {
		if newer := newerCheckpoints(file); newer != "" {
			return fmt.Errorf("--resume %s: its folder holds a newer checkpoint of the run, %s: a run resumed from an older checkpoint branches off, and the newer ones would outlive its own in that folder: give it a folder of its own with --checkpoint NEW (and --log NEW), or resume the newest (--resume %s)",
				file, newer, own)
		}
	}
	fork := copied || !res.sameFolder
	ownLog, original := res.ownLog(own, copied)
	if res.given["log"] {
		// The run's own log, by its path now or by its identity (a log
		// moved since, named where it is).
		res.continueLog = f.Log != "" && (ownLog != "" && atomicfile.SameFile(f.Log, ownLog) || res.isRunLog(f.Log))
		if res.continueLog && !atomicfile.SameFile(f.Log, ownLog) {
			original = true
		}
	} else {
		f.Log, res.continueLog = ownLog, ownLog != ""
	}
	if res.continueLog && atomicfile.Exists(f.Log) && !atomicfile.IsRegular(f.Log) {
		res.continueLog = false // a stream (standard output, a FIFO): written anew
	}
	if fork && res.continueLog && original {
		why := "its checkpoint folder is a copy of that run's"
		if !copied {
			why = "it writes its checkpoints into " + f.Checkpoint + ", not the run's folder " + own
		}
		return fmt.Errorf("--log %s is the log of the run %s continues, and %s: the resumed run is a new one, branching off, and may not write into that run's log: give it its own with --log NEW",
			f.Log, file, why)
	}
	if fork || res.run == "" {
		if res.run != "" {
			res.from = fmt.Sprintf("run %s at %d samples (%s)", res.run, res.saved.Samples, file)
		}
		res.run = checkpoint.NewRunID()
	}
	return nil
}

// ownLog returns where the resumed run's own log is now ("" when it had
// none), and whether that is the very file the run wrote (by identity),
// not a copy of it.
func (res *Resumed) ownLog(dir string, copied bool) (string, bool) {
	s := res.settings
	if s.Log == "" {
		return "", false
	}
	path := s.Log // an earlier hetsgd's checkpoint: as the run was given it
	switch {
	case !copied && s.LogAbs != "" && atomicfile.Exists(s.LogAbs):
		path = s.LogAbs
	case s.LogRel != "" && (copied || atomicfile.Exists(filepath.Join(dir, s.LogRel))):
		path = filepath.Join(dir, s.LogRel)
	case s.LogAbs != "":
		path = s.LogAbs
	}
	id, err := checkpoint.IDOf(path)
	original := s.LogID == nil || err == nil && id != nil && *id == *s.LogID
	return path, original
}

// isRunLog reports whether path is the very file the run wrote its log to.
func (res *Resumed) isRunLog(path string) bool {
	id, err := checkpoint.IDOf(path)
	return err == nil && id != nil && res.settings.LogID != nil && *id == *res.settings.LogID
}

// OpenLog opens the resumed run's log: the checkpoint run's own, continued
// from the checkpoint's offset, when Place chose to continue it; else a
// new file, which starts with the config record. A live dashboard (nil:
// none) is shown the continued log's records up to the checkpoint, then
// every record written.
func (res *Resumed) OpenLog(path string, force bool, in *atomicfile.Inputs, rec runlog.Config, dash *dashboard.Live) (*runlog.Log, error) {
	if path == "" {
		return nil, nil
	}
	var log *runlog.Log
	var err error
	if res.continueLog {
		if _, serr := os.Lstat(path); serr != nil {
			return nil, fmt.Errorf("--log %s: the log of the run to continue: %w (give --log NEW to start a new one)", path, serr)
		}
		if log, err = runlog.AppendLog(path, res.saved.Log, in.Paths()...); err == nil && dash != nil {
			err = publishFile(dash, path, res.saved.Log.Offset)
		}
		log.Also(dash.Publish)
	} else {
		if log, err = runlog.CreateLog(path, force, in.Paths()...); err == nil {
			log.Also(dash.Publish)
			err = log.Write(rec)
		}
	}
	if err == nil {
		r := runlog.Resume{Event: "resume", Checkpoint: res.rd.Path(), Samples: res.saved.Samples,
			TrainSeconds: res.saved.TrainSeconds, Changed: res.changed}
		if res.from != "" {
			r.Run, r.From = res.run, res.from
		}
		err = log.Write(r)
	}
	if err != nil {
		log.Close()
		return nil, err
	}
	return log, nil
}

// newerCheckpoints returns the newest checkpoint of file's folder that is
// newer than file and whole ("" when there is none): a damaged one does not
// count, so that a run whose newest checkpoint is damaged goes on from the
// one before.
func newerCheckpoints(file string) string {
	list, err := checkpoint.Dir(filepath.Dir(file)).List()
	if err != nil {
		return ""
	}
	for i := len(list) - 1; i >= 0 && filepath.Base(list[i]) > filepath.Base(file); i-- {
		if rd, err := checkpoint.Open(list[i]); err == nil {
			rd.Close()
			return list[i]
		}
	}
	return ""
}

// publishFile shows the records of the log file path up to offset at: a
// continued log's records before its checkpoint.
func publishFile(dash *dashboard.Live, path string, at int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := dash.PublishLog(f, at); err != nil {
		return fmt.Errorf("--dashboard: reading %s: %w", path, err)
	}
	return nil
}
