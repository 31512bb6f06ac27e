package train

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Every numeric flag of train and tune has a range in engine.Ranges (the
// strategy options have theirs in their registrations, the seed takes any
// value), and every default lies in it.
func TestNumericFlagsHaveRanges(t *testing.T) {
	var f Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := fl.Value.(*OptionFlag); ok || fl.Name == "seed" {
			return
		}
		numeric := false
		switch v := fl.Value.(type) {
		case *IntList, *FloatList:
			numeric = true
		case flag.Getter:
			switch v.Get().(type) {
			case int, int64, uint, uint64, float64:
				numeric = true
			}
		}
		if !numeric {
			return
		}
		d, _ := DeclOf(fl.Name)
		r, ok := d.Range()
		if !ok {
			t.Errorf("--%s has no range in engine.Ranges", fl.Name)
			return
		}
		for _, s := range strings.Split(fl.DefValue, ",") {
			if v, err := strconv.ParseFloat(s, 64); err == nil && !r.Contains(v) && !(v == 0 && zeroMeansDefault(fl.Name)) {
				t.Errorf("--%s: default %v is not %s", fl.Name, v, r)
			}
		}
	})
}

// zeroMeansDefault names the flags whose zero default stands for "the
// strategy's" rather than a value.
func zeroMeansDefault(name string) bool { return name == "batch" || name == "lr" || name == "momentum" }

// Every flag Register makes is declared (Decls) or a strategy's option, and
// every declaration has its flag.
func TestEveryFlagDeclared(t *testing.T) {
	var f Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	f.Register(fs)
	if err := checkDeclared(fs, &f); err != nil {
		t.Fatal(err)
	}
}

// checkDeclared reports a flag of fs that is neither declared in
// Decls nor a strategy's option, and a declaration without a flag.
func checkDeclared(fs *flag.FlagSet, f *Settings) error {
	var err error
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := DeclOf(fl.Name); !ok && f.Options[fl.Name] == nil && err == nil {
			err = fmt.Errorf("flag --%s has no declaration in Decls", fl.Name)
		}
	})
	for _, d := range Decls {
		if fs.Lookup(d.Name) == nil && err == nil {
			err = fmt.Errorf("Decls declares --%s, which train has no flag for", d.Name)
		}
	}
	return err
}

// RegisterSome declares the settings named as Register does — the same
// help, range and field — with the defaults given in place of theirs.
func TestRegisterSome(t *testing.T) {
	all := flag.NewFlagSet("train", flag.ContinueOnError)
	var a Settings
	a.Register(all)
	some := flag.NewFlagSet("tune", flag.ContinueOnError)
	var s Settings
	s.RegisterSome(some, map[string]any{"devices": 4, "epochs": 10}, "devices", "epochs", "data")
	n := 0
	some.VisitAll(func(f *flag.Flag) {
		n++
		if g := all.Lookup(f.Name); g == nil || g.Usage != f.Usage {
			t.Errorf("--%s: help %q, train's %q", f.Name, f.Usage, g.Usage)
		}
	})
	if n != 3 || s.Devices != 4 || s.Epochs != 10 || some.Lookup("devices").DefValue != "4" {
		t.Errorf("%d flags, devices %d, epochs %v", n, s.Devices, s.Epochs)
	}
	if err := some.Parse([]string{"--devices", "7", "--data", "d"}); err != nil || s.Devices != 7 || s.DataDir != "d" {
		t.Errorf("parsed: %v, devices %d, data %q", err, s.Devices, s.DataDir)
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown setting did not panic")
		}
	}()
	s.RegisterSome(flag.NewFlagSet("x", flag.ContinueOnError), nil, "no-such-setting")
}
