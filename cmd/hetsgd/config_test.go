package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/runlog"
)

// The bar: --print-config's output fed back with --config repeats the run
// (virtual time: the same log, byte for byte), for strategies of each
// family, with given options, --paper and a fault; so does the run's own
// log given as --config.
func TestPrintConfigRepeatsTheRun(t *testing.T) {
	dir := t.TempDir()
	base := []string{"train", "--time", "virtual", "--epochs", "1.5", "--eval-every", "0.5", "--hidden", "32", "--progress", "off"}
	for i, args := range [][]string{
		{"--strategy", "adaptive", "--devices", "4", "--speeds", "1,1,2,4", "--adaptive.beta", "4", "--adaptive.mega-batch", "10"},
		{"--strategy", "gem", "--devices", "3", "--paper", "--seed", "7"},
		{"--strategy", "crossbow", "--devices", "2", "--crossbow.tau", "2", "--fault", "device=1,at=0.001,kind=slow=3"},
		{"--strategy", "sync", "--devices", "2", "--optimizer", "momentum", "--lr", "0.05", "--hidden", "none"},
		{"--workload", "regression", "--dim", "20", "--strategy", "adacons", "--devices", "3", "--epochs", "0.2"},
	} {
		args = append(append([]string{}, base...), args...)
		name := filepath.Join(dir, string(rune('a'+i)))
		code, yaml, errs := runCLI(t, append(args, "--print-config")...)
		if code != 0 {
			t.Fatalf("%v --print-config: exit %d: %s", args, code, errs)
		}
		if err := os.WriteFile(name+".yaml", []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI(t, append(args, "--log", name+"-flags.jsonl")...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		for _, cfg := range []string{name + ".yaml", name + "-flags.jsonl"} {
			if code, _, errs := runCLI(t, "train", "--config", cfg, "--progress", "off", "--log", name+"-config.jsonl", "--force"); code != 0 {
				t.Fatalf("--config %s: exit %d: %s\n%s", cfg, code, errs, yaml)
			}
			a, _ := os.ReadFile(name + "-flags.jsonl")
			b, _ := os.ReadFile(name + "-config.jsonl")
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Fatalf("%v: the run from --config %s wrote another log:\n%s\n---\n%s\nconfig:\n%s", args, filepath.Base(cfg), a, b, yaml)
			}
		}
		// The config record holds the same settings --print-config printed.
		run, err := runlog.ReadFile(name + "-flags.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if run.Config.Schema != runlog.Schema || len(run.Config.Settings) == 0 {
			t.Fatalf("config record: schema %d, settings %v", run.Config.Schema, run.Config.Settings)
		}
		var printed bytes.Buffer
		if err := run.Config.Settings.WriteYAML(&printed, "x"); err != nil {
			t.Fatal(err)
		}
		if got := strings.SplitN(printed.String(), "\n", 2)[1]; !strings.HasSuffix(yaml, got) {
			t.Fatalf("the config record's settings differ from --print-config's:\n%s\n---\n%s", got, yaml)
		}
	}
}

// Flags given on the command line override the file's; options sit under
// the strategy's name; a list may be a YAML list or the flag's text.
func TestConfigFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("# a comment\nstrategy: elastic\ndevices: 2\nepochs: 3\nhidden: [16, 8]\ntime: virtual\nelastic:\n  k: 3\n"), 0o644)
	code, out, errs := runCLI(t, "train", "--config", cfg, "--epochs", "0.5", "--print-config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"\nepochs: 0.5\n", "\nhidden: [16, 8]\n", "\nstrategy: elastic\n", "\nelastic:\n  k: 3\n", "\ndevices: 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("effective settings lack %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"\nlog:", "\nprogress:", "\ncheckpoint", "\nmomentum:", "\nline-search:", "\noverlap:"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("effective settings hold %q, which is not a setting of this run:\n%s", unwanted, out)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	for _, c := range []struct {
		path string
		args []string
		code int
		want string
	}{
		{write("typo.yaml", "strategy: sync\nepoch: 3\n"), nil, 1, "typo.yaml:2: unknown setting \"epoch\" (did you mean epochs?)"},
		{write("bare.yaml", "strategy: adaptive\nbeta: 3\n"), nil, 1, "bare.yaml:2: unknown setting \"beta\" (strategy options go under the strategy's name: adacons.beta, adaptive.beta)"},
		{write("badopt.yaml", "strategy: adaptive\nadaptive:\n  betta: 3\n"), nil, 1, "badopt.yaml:3: unknown setting \"adaptive.betta\" (did you mean adaptive.beta?)"},
		{write("other.yaml", "strategy: adaptive\nadacons:\n  beta: 0.5\n"), nil, 1, "--adacons.beta: another strategy's option; this run's strategy is adaptive"},
		{write("value.yaml", "devices: four\n"), nil, 1, "value.yaml:1: devices \"four\": parse error"},
		{write("nested.yaml", "hidden: [[1]]\n"), nil, 1, "nested.yaml:1: hidden: want a list of values"},
		{write("twice.yaml", "devices: 2\ndevices: 3\n"), nil, 1, "twice.yaml:2"},
		{write("list.yaml", "- devices\n"), nil, 1, "list.yaml:1: want settings as `name: value` lines"},
		{write("syntax.yaml", "devices: [2\n"), nil, 1, "--config " + filepath.Join(dir, "syntax.yaml")},
		{filepath.Join(dir, "missing.yaml"), nil, 1, "missing.yaml: no such file"},
		{write("ok.yaml", "devices: 2\n"), []string{"--resume", dir}, 1, "--config with --resume"},
	} {
		args := append([]string{"train", "--config", c.path, "--print-config"}, c.args...)
		code, _, errs := runCLI(t, args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", filepath.Base(c.path), code, errs, c.code, c.want)
		}
	}
	// A run log without settings (a study's run) is no config.
	study := write("study.jsonl", `{"event":"config","schema":1,"command":"bench","name":"x"}`+"\n")
	if code, _, errs := runCLI(t, "train", "--config", study, "--print-config"); code != 1 || !strings.Contains(errs, "holds no settings") {
		t.Errorf("a study's log as --config: exit %d, %q", code, errs)
	}
}

// A mistyped command is answered with the nearest (setting.Suggest).
func TestSuggestCommand(t *testing.T) {
	if code, _, errs := runCLI(t, "trian"); code != 2 || !strings.Contains(errs, `unknown command "trian" (did you mean train?)`) {
		t.Errorf("a mistyped command: exit %d, %q", code, errs)
	}
}
