package train

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The packages' prefixes are dropped wherever a message, a line of it, or
// a wrapped message begins; the same word elsewhere — inside a name, a
// path, the text — is kept.
func TestStripPrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"engine: --speeds has 3 values for 4 devices": "--speeds has 3 values for 4 devices",
		"data: data: x": "x",
		"workload: memory: the model needs an estimated 4 GiB": "the model needs an estimated 4 GiB",
		"--model ck: checkpoint: folder ck is in use":          "--model ck: folder ck is in use",
		"data: x.txt:3: feature 7: value":                      "x.txt:3: feature 7: value",
		"--data data: dataset folder data does not exist":      "--data data: dataset folder data does not exist",
		"a: engine: b\ndata: c; model: d":                      "a: b\nc; d",
		"the model: weights":                                   "the model: weights",
		"metadata: x":                                          "metadata: x",
		"engines: x":                                           "engines: x",
		"/tmp/engine: x":                                       "/tmp/engine: x",
	} {
		if got := StripPrefixes(in); got != want {
			t.Errorf("StripPrefixes(%q) = %q, want %q", in, got, want)
		}
	}
}

// packages names every package of the module whose messages begin with
// its name, so that none of their prefixes reaches the tool's messages;
// and no name that is no package.
func TestPackagesListed(t *testing.T) {
	names := map[string]bool{}    // every package
	prefixed := map[string]bool{} // those with a message that begins "NAME: "
	filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
		if err != nil || f.Name.Name == "main" {
			return nil
		}
		name := f.Name.Name
		names[name] = true
		if src, err := os.ReadFile(path); err == nil && strings.Contains(string(src), `"`+name+`: `) {
			prefixed[name] = true
		}
		return nil
	})
	for name := range prefixed {
		if !slices.Contains(packages, name) {
			t.Errorf("package %s is not in packages: its errors' prefix would reach the tool's messages", name)
		}
	}
	for _, name := range packages {
		if !names[name] {
			t.Errorf("packages lists %s, which is no package of the module", name)
		}
	}
}

// The flag package's words for a bad value read as the tool's: the flag
// as typed, its value, and why in words; a reason that names the flag
// already stands alone.
func TestFlagValueMessage(t *testing.T) {
	for in, want := range map[string]string{
		`invalid value "x" for flag -seed: parse error`:                     "--seed x: not a value it takes (a number; a whole one ≥ 0 for a seed or a count; true or false for a switch)",
		`invalid value "1e99" for flag -batch: value out of range`:          "--batch 1e99: out of the range of its type",
		`invalid value "a" for flag -hidden: "a" is not a positive integer`: `--hidden a: "a" is not a positive integer`,
		`invalid value "x" for flag -fault: --fault x: want device=N`:       "--fault x: want device=N",
		"something else": "something else",
	} {
		if got := FlagValueMessage(in); got != want {
			t.Errorf("FlagValueMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// Message drops the prefixes where they stand — its own, and each wrapped
// error's — and keeps a name that only looks like one: a folder or a file
// named as a package is.
func TestMessageKeepsNamesLikePackages(t *testing.T) {
	notFolder := errors.New("not a checkpoint folder")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("trained: %s: %w", "model", notFolder), "model: not a checkpoint folder"},
		{fmt.Errorf("data: %s: header announces 1 points but the file has 0", "train"), "train: header announces 1 points but the file has 0"},
		{fmt.Errorf("trained: %w", errors.New("model: a bad shape")), "a bad shape"},
		{fmt.Errorf("engine: checkpoint %s: %w", "ck/x.hck", fmt.Errorf("checkpoint: %s: damaged", "data")), "checkpoint ck/x.hck: data: damaged"},
		{errors.Join(errors.New("data: a"), fmt.Errorf("model: %s: b", "train")), "a\ntrain: b"},
	} {
		if got := Message(c.err, nil); got != c.want {
			t.Errorf("Message(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
