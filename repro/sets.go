package repro

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/data"
)

// synthSets are the synthetic sets of the studies, by name: a profile of a
// real set, scaled so that a study of ~50 runs takes minutes. 1% of
// Amazon-670k is 4,904 training points, 1,359 features, 6,701 labels; 2% of
// Delicious-200k is 3,932 points, 15,651 features, 4,108 labels, with the
// real set's 301 non-zeros and 75 labels per point.
var synthSets = map[string]struct {
	profile string
	scale   float64
}{
	"amazon-synth":         {"amazon-670k", 0.01},
	"delicious-200k-synth": {"delicious-200k", 0.02},
}

// folderSets are the sets read from a folder of the data directory (their
// standard splits), with what the report says of them. Delicious is one of
// SetNames; MNIST is the GEM study's.
var folderSets = map[string]string{
	"delicious": "Delicious, the standard split (12,920 / 3,185 points, 500 features, 983 labels).",
	"mnist":     "MNIST (60,000 / 10,000 images, 784 pixels scaled to [0,1] as sparse features, 10 classes).",
}

// PaperSetNames are the paper study's sets: the stand-ins of the papers'
// sets at full scale, read from the folder of that name in the data
// directory, where hetsgd data gen --like NAME --out DIR/NAME writes them
// (generating them here would hold 700 MB of text in memory for nothing).
func PaperSetNames() []string { return data.PaperStandInNames() }

// SetNames returns the names of the sets the adaptive and heterogeneity
// studies take, sorted: bibtex (bundled), delicious (from a data
// directory) and the synthetic ones (generated).
func SetNames() []string {
	names := []string{"bibtex", "delicious"}
	for name := range synthSets {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// LoadSet returns the set name of SetNames, or "mnist" (the GEM study's),
// with its note for the report: bibtex from the binary, delicious and
// mnist from their folders of dataDir, a synthetic set generated with
// seed. It returns nil, and no error, for a set of dataDir that is not
// there (dataDir "" holds none).
func LoadSet(ctx context.Context, name, dataDir string, seed uint64) (*Set, error) {
	if name == "bibtex" {
		tr, te, err := data.Bundled("bibtex")
		if err != nil {
			return nil, err
		}
		set, err := NewSet("bibtex", tr, te, "Bibtex, the standard split bundled with hetsgd (4,880 / 2,515 points, 1,836 features, 159 labels).")
		return &set, err
	}
	if note, ok := folderSets[name]; ok || slices.Contains(PaperSetNames(), name) {
		return loadFolder(ctx, name, dataDir, note)
	}
	s, ok := synthSets[name]
	if !ok {
		return nil, fmt.Errorf("repro: unknown dataset %q (want %s, or a paper's set: %s)", name, strings.Join(SetNames(), ", "), strings.Join(PaperSetNames(), ", "))
	}
	p, err := data.LookupProfile(s.profile)
	if err != nil {
		return nil, err
	}
	real := p
	p = p.Scaled(s.scale)
	tr, te, err := data.GenerateSets(p, seed)
	if err != nil {
		return nil, err
	}
	set, err := NewSet(name, tr, te, fmt.Sprintf(
		"Synthetic %s-like data from `hetsgd data gen --like profile:%s --scale %g --seed %d`: %d / %d points, %d features, %d labels, %.1f non-zeros and %.1f labels per point (the real set: %.1f and %.1f), power-law labels.",
		s.profile, s.profile, s.scale, seed, tr.Len(), te.Len(), tr.Features(), tr.Labels(),
		float64(tr.X.NNZ())/float64(tr.Len()), float64(tr.Y.NNZ())/float64(tr.Len()), real.AvgNNZ, real.AvgLabels))
	return &set, err
}

// loadFolder reads set name from dataDir/name (nil, and no error, when
// that folder is not there), with note for the report; "" for a paper's
// stand-in, whose note gives its statistics.
func loadFolder(ctx context.Context, name, dataDir, note string) (*Set, error) {
	if dataDir == "" {
		return nil, nil
	}
	dir := filepath.Join(dataDir, name)
	if _, err := os.Stat(dir); err != nil {
		return nil, nil
	}
	tr, te, err := data.Loader{Context: ctx}.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	if note == "" {
		note = fmt.Sprintf("The stand-in of %s built from its published statistics (`hetsgd data gen --like %s`, read from the data folder's %s/): %d / %d points, %d features, %d labels, %.1f non-zeros and %.2f labels a point.",
			name, name, name, tr.Len(), te.Len(), tr.Features(), tr.Labels(), float64(tr.X.NNZ())/float64(tr.Len()), float64(tr.Y.NNZ())/float64(tr.Len()))
	}
	set, err := NewSet(name, tr, te, note)
	return &set, err
}

// LoadInputs reads from dataDir (LoadSet, with seed) the data sel's
// studies run on, each set once, every one before any study runs, so that
// a missing or bad one stops a bench before it writes anything. stage is
// told of each set read, and note of each set or section skipped. The
// paper study run only as a part of all (not sel.NamedPaper) without its
// sets is dropped from sel; named without them, or with --sets naming
// one the folder lacks (setsNamed), it is an error.
func LoadInputs(ctx context.Context, sel *Selection, dataDir string, seed uint64, setsNamed bool, stage, note func(string)) (Inputs, error) {
	var in Inputs
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped while reading the data: %w", err)
		}
		return nil
	}
	// load reads the sets named into *into; absent one calls missing.
	load := func(names []string, into *[]Set, missing func(name string) error) error {
		for _, name := range names {
			if err := stopped(); err != nil {
				return err
			}
			stage("reading " + name)
			set, err := LoadSet(ctx, name, dataDir, seed)
			if err != nil {
				return err
			}
			if set != nil {
				*into = append(*into, *set)
			} else if err := missing(name); err != nil {
				return err
			}
		}
		return nil
	}
	if sel.Runs("adaptive") || sel.Runs("heterogeneity") {
		err := load(sel.Sets, &in.Sets, func(name string) error {
			note(fmt.Sprintf("skipping %s: no --data folder holds it", name))
			return nil
		})
		if err != nil {
			return in, err
		}
	}
	err := load(sel.Paper, &in.Paper, func(name string) error {
		if !setsNamed {
			return nil // the default: those --data holds
		}
		return fmt.Errorf("--sets %s: no --data folder holds %s/ (write it with hetsgd data gen --like %s --out DIR/%s)", name, name, name, name)
	})
	if err != nil {
		return in, err
	}
	if sel.Runs("paper") && len(in.Paper) == 0 && !sel.NamedPaper {
		// --study all: the paper study needs data that takes minutes to
		// write, so its absence skips the study rather than the bench.
		note(fmt.Sprintf("no --data folder holds %s/: skipping the paper study", strings.Join(PaperSetNames(), "/ or ")))
		sel.Studies = slices.DeleteFunc(sel.Studies, func(s string) bool { return s == "paper" })
	} else if sel.Runs("paper") && len(in.Paper) == 0 {
		return in, fmt.Errorf("--study paper needs a stand-in of a paper's set in a --data folder: write one with hetsgd data gen --like %s --out DIR/%s", PaperSetNames()[0], PaperSetNames()[0])
	}
	for i := range in.Sets {
		if in.Sets[i].Name == "delicious" {
			in.Delicious = &in.Sets[i] // loaded once, for every study
		}
	}
	if (sel.Runs("lsgd") || sel.Runs("adacons")) && in.Delicious == nil {
		if in.Delicious, err = LoadSet(ctx, "delicious", dataDir, seed); err != nil {
			return in, err
		}
		if in.Delicious == nil {
			note("no --data folder holds delicious/: the studies skip their Delicious sections")
		}
	}
	if sel.Runs("gem") {
		if in.MNIST, err = LoadSet(ctx, "mnist", dataDir, seed); err != nil {
			return in, err
		}
		if in.MNIST == nil {
			return in, fmt.Errorf("--study gem needs MNIST: a --data folder holding mnist/")
		}
	}
	return in, stopped()
}
