package setting_test

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/setting"
)

var flags = map[string]string{
	"engine.Config.Devices": "--devices",
	"engine.Config.Clock":   "--time",
	"model.Config.Hidden":   "--hidden",
}

func flag(field string) string { return flags[field] }

func TestErrorNamesFieldsAndRenames(t *testing.T) {
	for _, c := range []struct {
		err      error
		lib, cli string
		fields   []string
	}{
		{setting.Errorf("engine", "engine: {Config.Devices} %d: need a multiple of the %d ranks", 3, 2),
			"engine: Config.Devices 3: need a multiple of the 2 ranks",
			"engine: --devices 3: need a multiple of the 2 ranks",
			[]string{"engine.Config.Devices"}},
		{setting.Errorf("engine", "engine: fewer {Config.Devices} or a smaller {model.Config.Hidden}"),
			"engine: fewer Config.Devices or a smaller model.Config.Hidden",
			"engine: fewer --devices or a smaller --hidden",
			[]string{"engine.Config.Devices", "model.Config.Hidden"}},
		// A field the front end does not know keeps its name; braces in
		// values and braces that open no field are text.
		{setting.Errorf("engine", "engine: {Config.Seed} %q: {not a field} {}", "{Config.Clock}"),
			`engine: Config.Seed "{Config.Clock}": {not a field} {}`,
			`engine: Config.Seed "{Config.Clock}": {not a field} {}`,
			[]string{"engine.Config.Seed"}},
		// A name holding a verb is written as itself.
		{setting.Errorf("engine", "engine: {Config.Clock} %s", "x"),
			"engine: Config.Clock x", "engine: --time x", []string{"engine.Config.Clock"}},
	} {
		if got := c.err.Error(); got != c.lib {
			t.Errorf("Error() = %q, want %q", got, c.lib)
		}
		if got := setting.Rename(c.err, flag); got != c.cli {
			t.Errorf("Rename = %q, want %q", got, c.cli)
		}
		var e *setting.Error
		if !errors.As(c.err, &e) || !slices.Equal(e.Fields(), c.fields) {
			t.Errorf("%q: Fields = %v, want %v", c.lib, e.Fields(), c.fields)
		}
	}
	pct := setting.Errorf("engine", "engine: {Config.Clock}")
	if got := setting.Rename(pct, func(string) string { return "100%" }); got != "engine: 100%" {
		t.Errorf("a name with a %% sign: %q", got)
	}
}

func TestRenameThroughWrapping(t *testing.T) {
	inner := setting.Errorf("engine", "engine: {Config.Devices} %d: too many: %w", 9, fs.ErrInvalid)
	outer := setting.Errorf("engine", "engine: {Config.Clock} virtual: %w", inner)
	err := errors.Join(fmt.Errorf("train: %w", outer), errors.New("Config.Devices stays in plain errors"),
		setting.Errorf("tune", "tune: {Config.LRs} empty"))
	want := "train: engine: --time virtual: engine: --devices 9: too many: invalid argument\n" +
		"Config.Devices stays in plain errors\ntune: Config.LRs empty"
	if got := setting.Rename(err, flag); got != want {
		t.Errorf("Rename =\n%s\nwant\n%s", got, want)
	}
	if !errors.Is(err, fs.ErrInvalid) {
		t.Error("the wrapped error is lost")
	}
	if setting.Rename(nil, flag) != "" {
		t.Error("Rename(nil) is not empty")
	}
	if got := setting.Rename(errors.New("plain"), flag); got != "plain" {
		t.Errorf("a plain error: %q", got)
	}
}
