package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/train"
)

// fieldRef is a setting as setting.Errorf's formats name it.
var fieldRef = regexp.MustCompile(`\{([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)+)\}`)

// TestErrorsNameFlags reads every string of the library's packages for the
// settings their errors name, and checks that the tool has a name for each
// (and keeps no name that no error uses): a library error that names a field
// the tool does not know would reach its users as a Go field.
func TestErrorsNameFlags(t *testing.T) {
	used := map[string]string{}
	fset := token.NewFileSet()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "cmd" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, m := range fieldRef.FindAllStringSubmatch(s, -1) {
				field := m[1]
				if c := field[0]; c >= 'A' && c <= 'Z' {
					field = f.Name.Name + "." + field
				}
				used[field] = fset.Position(lit.Pos()).String()
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 20 {
		t.Fatalf("found %d fields named by errors: the scan is broken", len(used))
	}
	var fields []string
	for f := range used {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	flagOf := train.Names()
	maps.Copy(flagOf, otherPhrases)
	for _, f := range fields {
		if flagOf[f] == "" {
			t.Errorf("%s: an error names %s, which the tool has no name for (add it to flagOf)", used[f], f)
		}
	}
	for f := range flagOf {
		if _, ok := used[f]; !ok {
			t.Errorf("flagOf names %s, which no error names", f)
		}
	}
}

// TestErrorMessagesNameFlags checks, through the engine's own validation,
// that a refused setting reaches the user as its flag.
func TestErrorMessagesNameFlags(t *testing.T) {
	for _, c := range []struct {
		cfg  engine.Config
		want string
	}{
		{engine.Config{Strategy: "sync", Devices: 2, Batch: 8, LR: 0.1, Clock: engine.Real, Epochs: 1, EvalEvery: 1, Speeds: []float64{1}},
			"--speeds has 1 values for 2 devices"},
		{engine.Config{Strategy: "sync", Devices: 1, Batch: 8, LR: 0.1, Clock: "sundial", Epochs: 1, EvalEvery: 1},
			`--time "sundial": want real or virtual`},
		{engine.Config{Strategy: "sync", Devices: 1, Batch: 8, LR: 0.1, Clock: engine.Real, EvalEvery: 1},
			"give --epochs or --time-budget (or both)"},
		{engine.Config{Strategy: "sync", Devices: 1, Batch: 8, LR: -1, Clock: engine.Real, Epochs: 1, EvalEvery: 1},
			"--lr -1: need a number in (0, 1e+06]"},
	} {
		err := c.cfg.Validate()
		if _, ok := err.(*setting.Error); !ok {
			t.Errorf("%v: not a setting error", err)
			continue
		}
		if got := message(err); got != c.want {
			t.Errorf("message = %q, want %q", got, c.want)
		}
	}
}
