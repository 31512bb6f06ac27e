package engine

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// algorithmWords are the names of algorithms, as identifiers or strings
// would spell them (lower case; "sync", "sum" and "staleness" are also
// ordinary words of the engine's).
var algorithmWords = regexp.MustCompile(`layered|lsgd|slide|diloco|adacons|crossbow|\bgem\b|elastic|adaptive|downpour|async-?local|streaming`)

// knownNames are the places the engine still names an algorithm in code,
// by file and word, each with the reason: the list may only shrink, and
// the test fails when a place no longer names it.
var knownNames = map[string]string{
	// Layered SGD's all-reduce across ranks, overlapped with the
	// preparation of the next batches, is still the engine's
	// (Action.Layered), not an op on Host.IAllReduce.
	"account.go: layered":  "Layered SGD's timing",
	"cluster.go: layered":  "the command's flag for a layered all-reduce",
	"driver.go: layered":   "the layered all-reduce and its overlap with the next dispatches",
	"executor.go: layered": "the layered all-reduce itself",
	"job.go: layered":      "the job's layered timing",
	"local.go: layered":    "Layered SGD's ranks in one process",
	"record.go: layered":   "the done record's account of it",
	"virtual.go: layered":  "its price on the virtual clock",
	// Info.Output names the sampled layer's SLIDE mode a strategy needs.
	"driver.go: slide": "the output layer SLIDE's strategy trains",
}

// The engine names no algorithm outside its comments: an algorithm's
// arithmetic is its op's, and its shape its strategy's. The test reads
// every identifier and string of the engine's files (not its tests).
func TestEngineNamesNoAlgorithm(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0) // comments skipped
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.IDENT && tok != token.STRING {
				continue
			}
			for _, w := range algorithmWords.FindAllString(strings.ToLower(lit), -1) {
				key := path + ": " + w
				if !found[key] {
					found[key] = true
					if _, ok := knownNames[key]; !ok {
						t.Errorf("%s names %q (%s): an algorithm belongs to its strategy's package", fset.Position(pos), w, lit)
					}
				}
			}
		}
	}
	var gone []string
	for key := range knownNames {
		if !found[key] {
			gone = append(gone, key)
		}
	}
	sort.Strings(gone)
	for _, key := range gone {
		t.Errorf("%s: no longer named: take it off knownNames", key)
	}
}
