package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// A config file holds any flag of hetsgd train by its name, without dashes,
// and a strategy's options under the strategy's name:
//
//	strategy: adaptive
//	devices: 4
//	hidden: [128]
//	adaptive:
//	  beta: 8
//
// It is YAML (JSON is YAML too); a run log is read as the settings in its
// config record. Flags given on the command line override the file's
// values. Paths in the file are taken as the command line takes them:
// relative to the current folder.

// Effective returns the run's effective settings, as --print-config prints
// them and the config record holds them: every flag that decides the run
// and applies to it (inapplicable), in the flags' order, with its value —
// for the settings the strategy's defaults fill in (batch, lr, optimizer,
// momentum, weight-decay) the run's, read from cfg, where EngineConfig put
// them; then the strategy's options that are numbers (given, or defaults),
// under its name.
// Derived defaults (formulas of the run's data and settings) are left out,
// so that they are derived again when a setting they depend on changes.
func (f *Settings) Effective(fs *flag.FlagSet, info strategy.Info, cfg engine.Config) runlog.Settings {
	ranks := 1
	if cfg.World != nil {
		ranks = cfg.World.Size()
	}
	skip := inapplicable(info, cfg.Optimizer.Name, f, ranks)
	set := Visited(fs)
	effective := map[string]any{"batch": cfg.Batch, "lr": cfg.LR, "optimizer": cfg.Optimizer.Name,
		"momentum": cfg.Optimizer.Momentum, "weight-decay": cfg.Optimizer.WeightDecay}
	var out runlog.Settings
	fs.VisitAll(func(fl *flag.Flag) {
		name := fl.Name
		if _, isOption := f.Options[name]; isOption || slices.Contains(notSettings, name) {
			return
		}
		if _, no := skip[name]; no {
			return
		}
		if f.slideHashing && slices.Contains(slideHashFlags, name) {
			return // derived from the data set, and derived again
		}
		if !set[name] && slices.Contains(omitUnset, name) {
			return // empty: the bundled data, the built-in models, equal speeds, no faults
		}
		v, ok := effective[name]
		if !ok {
			v = settingValue(fl)
		}
		out = append(out, runlog.Setting{Name: name, Value: v})
	})
	vals, err := info.Describe(strategy.Config{Devices: cfg.Devices, Batch: cfg.Batch, LR: cfg.LR, DatasetSize: 1, Options: cfg.Options})
	if err != nil || len(vals) == 0 {
		return out
	}
	var opts runlog.Settings
	for _, v := range vals {
		if v.Given || v.Formula == "" {
			opts = append(opts, runlog.Setting{Name: v.Name, Value: v.Value})
		}
	}
	if len(opts) > 0 {
		out = append(out, runlog.Setting{Name: info.Name, Value: opts})
	}
	return out
}

// settingValue is a flag's value as a setting: a number, a bool, a string
// or a list, as JSON and YAML write them.
func settingValue(fl *flag.Flag) any {
	switch v := fl.Value.(type) {
	case *IntList:
		return append([]int{}, (*v)...)
	case *FloatList:
		return append([]float64{}, (*v)...)
	case *FaultList:
		s := []string{}
		for _, x := range *v {
			s = append(s, x.String())
		}
		return s
	case flag.Getter:
		return v.Get()
	}
	return fl.Value.String()
}

// ApplyConfig sets the flags of fs from the config file path, except those
// already given on the command line (set), which override the file. A key
// that is no flag is an error naming the file's line and the nearest name.
func ApplyConfig(fs *flag.FlagSet, path string, set map[string]bool, strategies []strategy.Info) error {
	b, err := readConfigFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"event":"config"`)) {
		// A run log: its config record's settings.
		run, err := runlog.Read(bytes.NewReader(b), path)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		rec := run.Config
		if rec.Settings == nil {
			return fmt.Errorf("--config %s: the log's config record holds no settings (a study's run, or an earlier version's log)", path)
		}
		if b, err = json.Marshal(rec.Settings); err != nil {
			return fmt.Errorf("--config %s: %w", path, err)
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("--config %s: %v", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("--config %s:%d: want settings as `name: value` lines", path, root.Line)
	}
	isStrategy := func(name string) bool {
		return slices.ContainsFunc(strategies, func(i strategy.Info) bool { return i.Name == name })
	}
	at := func(n *yaml.Node) string { return fmt.Sprintf("--config %s:%d", path, n.Line) }
	seen := map[string]bool{}
	var apply func(prefix string, m *yaml.Node) error
	apply = func(prefix string, m *yaml.Node) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			name := prefix + k.Value
			if seen[name] {
				return fmt.Errorf("%s: %s is given twice", at(k), name)
			}
			seen[name] = true
			if prefix == "" && v.Kind == yaml.MappingNode && isStrategy(k.Value) {
				if err := apply(name+".", v); err != nil {
					return err
				}
				continue
			}
			fl := fs.Lookup(name)
			if fl == nil {
				return fmt.Errorf("%s: unknown setting %q%s", at(k), name, setting.Suggest(name, FlagNames(fs), ""))
			}
			if slices.Contains(notInConfig, name) {
				// A key that would be ignored is refused, not ignored.
				return fmt.Errorf("%s: %s is not for a config file: %s", at(k), name, notInConfigWhy[name])
			}
			if set[name] {
				continue // the command line's value stands
			}
			values, err := scalars(v)
			if err != nil {
				return fmt.Errorf("%s: %s: %v", at(v), name, err)
			}
			if _, repeated := fl.Value.(*FaultList); !repeated {
				values = []string{strings.Join(values, ",")}
			}
			for _, x := range values {
				if err := fs.Set(name, x); err != nil {
					return fmt.Errorf("%s: %s %q: %v", at(v), name, x, err)
				}
			}
		}
		return nil
	}
	return apply("", root)
}

// notInConfig are the flags a config file may not give: they say how this
// invocation reads its settings, or start another kind of run.
var notInConfig = []string{"config", "print-config", "resume"}

var notInConfigWhy = map[string]string{
	"config":       "a config file does not read another (give the settings here, or several files' worth on the command line)",
	"print-config": "give --print-config on the command line",
	"resume":       "a resumed run takes its settings from its checkpoint: give --resume on the command line, without --config",
}

// scalars returns a value's text: a scalar's, or each of a list's.
func scalars(v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil, errors.New("no value")
		}
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		out := []string{}
		for _, x := range v.Content {
			if x.Kind != yaml.ScalarNode {
				return nil, errors.New("want a list of values")
			}
			out = append(out, x.Value)
		}
		if len(out) == 0 {
			return []string{"none"}, nil // hidden: [] is a linear model
		}
		return out, nil
	}
	return nil, errors.New("want a value or a list of values")
}

// PrintFlags writes fs's flags as the flag package's PrintDefaults does,
// each on a line of its own and its help on the next, but named as the
// tool's messages and documentation name them: --name, a placeholder for
// its value (the help's first `quoted` word, else its type; none for a
// switch), and its default when it has one, unquoted.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name == "value" {
			name = "" // a value of the tool's own type: its help says what it takes
		}
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch f.DefValue {
		case "", "0", "false", "[]":
		default:
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// FlagNames returns fs's flags' names, for suggestions.
func FlagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// maxConfigBytes bounds a config file: the settings of a run are a few KB.
const maxConfigBytes = 1 << 20

// readConfigFile reads a config file, at most maxConfigBytes of it; of a
// run log, which may be far longer, only the first record (its config
// record, which holds the settings), at most a record's longest.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if head, _ := br.Peek(64); !bytes.HasPrefix(bytes.TrimSpace(head), []byte(`{"event":"config"`)) {
		return bounded.ReadFile(path, maxConfigBytes, "a config file")
	}
	first, err := bounded.NewLines(br, runlog.MaxRecordBytes).Next()
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w: not a run log", path, err)
	}
	return first, nil
}

// Usage writes "hetsgd train --help" for the flags fs parsed so far into
// f: the run's effective settings for the strategy chosen so far on the
// command line (sync unless --strategy came before --help), then the flags,
// with only that strategy's options.
func (f *Settings) Usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: hetsgd train [flags]\n\n")
	info, err := strategy.Lookup(f.Strategy)
	if err != nil {
		info, _ = strategy.Lookup("sync")
	}
	set := Visited(fs)
	cfg := engine.Config{Strategy: info.Name, Devices: f.Devices, Paper: f.Paper, Options: f.GivenOptions(info.Name)}
	if set["batch"] {
		cfg.Batch = f.Batch
	}
	if set["lr"] {
		cfg.LR = f.LR
	}
	if set["optimizer"] {
		cfg.Optimizer.Name = strings.ToLower(f.Optimizer)
	}
	fmt.Fprintf(w, "Settings of --strategy %s on %d device(s) (hetsgd strategies -v lists every strategy):\n", info.Name, f.Devices)
	points := 0 // known once the data is loaded
	if f.DataDir == "" && f.TrainPath == "" {
		points = BundledPoints
	}
	if err := DescribeStrategy(w, "  ", cfg, points, set); err != nil {
		fmt.Fprintf(w, "  %v\n", err)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	show := flag.NewFlagSet("train", flag.ContinueOnError)
	show.SetOutput(w)
	fs.VisitAll(func(fl *flag.Flag) {
		if _, isOption := f.Options[fl.Name]; isOption && !strings.HasPrefix(fl.Name, info.Name+".") {
			return // another strategy's option
		}
		show.Var(fl.Value, fl.Name, fl.Usage)
		show.Lookup(fl.Name).DefValue = fl.DefValue
	})
	PrintFlags(w, show)
}

// DescribeStrategy writes the effective settings of cfg's strategy — the
// optimizer, learning rate and batch, then every option the strategy takes —
// as flags, each with its value for this run, the formula of a derived
// default, and where it departs from the paper (engine.Config.Describe).
// points is the number of training points (0: not known yet); given names
// the settings the user gave.
func DescribeStrategy(w io.Writer, indent string, cfg engine.Config, points int, given map[string]bool) error {
	d, err := cfg.Describe(points, given)
	if err != nil {
		return err
	}
	width := 16 // every flag's value starts in one column
	for _, s := range d.Options {
		width = max(width, len(s.Name)+2)
	}
	for _, s := range d.Common {
		fmt.Fprintf(w, "%s%-*s %-28s %s\n", indent, width, "--"+s.Name, s.Value, s.Note)
	}
	for _, s := range d.Options {
		if len(s.Value) > 28 {
			fmt.Fprintf(w, "%s%-*s %s\n%s%-*s %-28s %s\n", indent, width, "--"+s.Name, s.Value, indent, width, "", "", s.Note)
		} else {
			fmt.Fprintf(w, "%s%-*s %-28s %s\n", indent, width, "--"+s.Name, s.Value, s.Note)
		}
		if s.Paper != "" {
			fmt.Fprintf(w, "%s%-*s %-28s differs from the paper: %s\n", indent, width, "", "", s.Paper)
		}
	}
	if d.Preset != nil {
		var flags []string
		for _, s := range d.Preset {
			flags = append(flags, "--"+s.Name+" "+s.Value)
		}
		fmt.Fprintf(w, "%s--paper: %s (%s)\n", indent, strings.Join(flags, " "), d.PresetSource)
	}
	return nil
}
