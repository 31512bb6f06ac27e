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
