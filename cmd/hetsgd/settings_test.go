package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/train"
)

// Every setting is declared once (train.Decls), and the declaration is
// what every part reads: the test walks it and finds each setting of the
// run in --print-config, in a config file that gives it back, in the log's
// config record, and in the checkpoint's identity — a resumed run refuses
// another value unless the declaration says it may change.
func TestEverySettingDeclaredOnce(t *testing.T) {
	var f train.Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs) // every flag declared: train's TestEveryFlagDeclared

	dir := t.TempDir()
	network := filepath.Join(dir, "network.json")
	b, _ := json.Marshal(comm.DefaultModel)
	if err := os.WriteFile(network, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cost, _ := filepath.Abs("../../cost/default_cost.json")
	base := []string{"train", "--progress", "off"}
	// Runs between them apply every setting (a setting that does not apply
	// to a run is left out of its settings).
	runs := [][]string{
		{"--hidden", "8", "--time", "virtual", "--epochs", "0.2", "--devices", "2", "--speeds", "1,2", "--optimizer", "momentum", "--lr", "0.1",
			"--fault", "device=1,at=0.001,kind=slow=2", "--cost", cost, "--network", network, "--groups", "2", "--prep", "1e-6"},
		{"--strategy", "lsgd", "--epochs", "0.2", "--devices", "4", "--groups", "2", "--overlap=false", "--eval-points", "50"},
		{"--output", "lsh", "--epochs", "0.05", "--lsh-correct"},
		{"--workload", "regression", "--dim", "20", "--line-search", "--step-rule", "loss", "--strategy", "adacons", "--optimizer", "sgd", "--devices", "2", "--epochs", "0.1", "--time", "virtual", "--timing-only=false"},
	}
	seen := map[string]bool{}
	for _, args := range runs {
		args = append(append([]string{}, base...), args...)
		code, yaml, errs := runCLI(t, append(args, "--print-config")...)
		if code != 0 {
			t.Fatalf("%v --print-config: exit %d: %s", args, code, errs)
		}
		// The config file gives every setting back.
		file := filepath.Join(dir, "run.yaml")
		os.WriteFile(file, []byte(yaml), 0o644)
		if code, again, errs := runCLI(t, "train", "--config", file, "--print-config"); code != 0 || again != yaml {
			t.Fatalf("%v: --config of its --print-config: exit %d (%s), prints\n%s\nwant\n%s", args, code, errs, again, yaml)
		}
		// The log's config record holds them.
		log := filepath.Join(dir, "run.jsonl")
		if code, _, errs := runCLI(t, append(args, "--log", log, "--force")...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		rec, err := runlog.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(yaml, "\n") {
			name, _, ok := strings.Cut(line, ":")
			if !ok || strings.HasPrefix(line, "#") || strings.HasPrefix(line, " ") {
				continue
			}
			seen[name] = true
			if _, ok := rec.Config.Settings.Lookup(name); !ok {
				t.Errorf("%v: the config record lacks %s, which --print-config printed", args, name)
			}
		}
	}
	for _, d := range train.Decls {
		// The data's flags name where it is (the tests' bundled set has
		// none); format and cache say how to read it.
		if !d.NotSetting && !seen[d.Name] && !d.Input && d.Name != "format" && d.Name != "cache" {
			t.Errorf("--%s is declared a setting, but no run's --print-config holds it", d.Name)
		}
	}

	// The checkpoint's identity: a resume refuses another value of every
	// saved setting that may not change, naming it.
	ck := filepath.Join(dir, "ck")
	if code, _, errs := runCLI(t, "train", "--time", "virtual", "--epochs", "0.2", "--hidden", "8", "--progress", "off", "--checkpoint", ck); code != 0 {
		t.Fatalf("checkpointed run: exit %d: %s", code, errs)
	}
	other := map[string]string{"optimizer": "adam", "strategy": "elastic", "time": "real", "output": "lsh", "lsh-hash": "srp",
		"lsh-fill": "point", "lsh-update": "dense", "allreduce": "tree", "workload": "regression", "step-rule": "loss",
		"fault": "device=0,at=1,kind=crash", "hidden": "9", "cost": cost, "network": network, "topology": "1x1",
		"momentum": "0.5", "dropout": "0.3", "lsh-active": "0.5", "lsh-growth": "0.5", "weight-decay": "0.01", "noise": "0.1",
		"net-latency": "1e-3", "net-bandwidth": "1e3", "inter-latency": "1e-3", "inter-bandwidth": "1e3", "prep": "0.5", "lr": "0.5"}
	for _, d := range train.Decls {
		if d.MayChange || d.NotSaved {
			continue
		}
		v, ok := other[d.Name]
		if !ok {
			fl := fs.Lookup(d.Name)
			switch fl.DefValue {
			case "false":
				v = "true"
			case "true":
				v = "false"
			default:
				v = "3"
			}
		}
		code, _, errs := runCLI(t, "train", "--resume", ck, "--"+d.Name+"="+v)
		if code == 0 || !strings.Contains(errs, "--"+d.Name) {
			t.Errorf("resume with --%s=%s: exit %d, %q: want it refused, naming --%s", d.Name, v, code, errs, d.Name)
		}
	}
}
