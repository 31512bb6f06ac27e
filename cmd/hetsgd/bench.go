package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/repro"
)

// synthSets are the synthetic sets of the benchmarks, by name: a profile
// of a real set, scaled so that a study of ~50 runs takes minutes. 1% of
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

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", "bench --out DIR [--data DIR] [--sets LIST] [--quick]", stderr)
	out := fs.String("out", "", "report `folder` (report.md, figures, runs/*.jsonl)")
	dataDir := fs.String("data", os.Getenv("HETSGD_DATA"), "`folder` holding reference datasets (delicious/ with train.txt and test.txt); default $HETSGD_DATA")
	sets := fs.String("sets", "bibtex,delicious,amazon-synth", "datasets of the adaptive and heterogeneity studies, comma-separated: bibtex (bundled), delicious (from --data), amazon-synth, delicious-200k-synth (generated)")
	study := fs.String("study", "adaptive", "which studies to run, comma-separated: adaptive, lsgd, gem, adacons (the papers'), heterogeneity (every strategy at its defaults on unequal devices), or all")
	quick := fs.Bool("quick", false, "tiny budgets and few settings: a smoke test of the pipeline, not a result")
	seed := fs.Uint64("seed", 1, "`seed` of every run")
	force := fs.Bool("force", false, "overwrite an existing report in --out")
	parts := fs.String("parts", "", "heterogeneity study: only these of its sections, comma-separated: spreads, protocols, devices, local (default: all)")
	network := fs.String("network", "", "lsgd study: the links within and between nodes from `file` (hetsgd calibrate --network) instead of PCIe and 25 Gb/s Ethernet")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stderr, "hetsgd bench: --out is required")
		fs.Usage()
		return errUsage
	}
	studies := map[string]bool{}
	for _, s := range strings.Split(*study, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			studies["adaptive"], studies["lsgd"], studies["gem"], studies["adacons"], studies["heterogeneity"] = true, true, true, true, true
		case "adaptive", "lsgd", "gem", "adacons", "heterogeneity":
			studies[s] = true
		default:
			return fmt.Errorf("--study %q: want adaptive, lsgd, gem, adacons, heterogeneity or all", s)
		}
	}
	// Every name of --sets is checked before any work, whatever the
	// studies: a misspelt one must not go unnoticed.
	known := []string{"bibtex", "delicious"}
	for name := range synthSets {
		known = append(known, name)
	}
	slices.Sort(known)
	var setNames []string
	for _, name := range strings.Split(*sets, ",") {
		switch name = strings.TrimSpace(name); {
		case name == "":
			return fmt.Errorf("--sets %q: an empty name; want a comma-separated list of %s", *sets, strings.Join(known, ", "))
		case !slices.Contains(known, name):
			return fmt.Errorf("--sets: unknown dataset %q%s (want %s)", name, suggest(name, known, ""), strings.Join(known, ", "))
		}
		setNames = append(setNames, name)
	}
	var in atomicfile.Inputs
	if *dataDir != "" {
		for _, set := range []string{"bibtex", "delicious", "mnist"} {
			in.Add("--data set", filepath.Join(*dataDir, set))
		}
	}
	in.Add("--network file", *network)
	if err := in.Check("--out", *out); err != nil {
		return err
	}
	if visited(fs)["sets"] && !studies["adaptive"] && !studies["heterogeneity"] {
		fmt.Fprintf(stderr, "hetsgd bench: warning: --sets applies to the adaptive and heterogeneity studies; ignored\n")
	}
	var partList []string
	if *parts != "" {
		for _, p := range strings.Split(*parts, ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(repro.HeterogeneityParts, p) {
				return fmt.Errorf("--parts %q: want %s", p, strings.Join(repro.HeterogeneityParts, ", "))
			}
			partList = append(partList, p)
		}
	}
	var list []repro.Set
	for _, name := range setNames {
		if !studies["adaptive"] && !studies["heterogeneity"] {
			break
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped while reading the data: %w", err)
		}
		set, err := benchSet(ctx, name, *dataDir, *seed)
		if err != nil {
			return err
		}
		if set != nil {
			list = append(list, *set)
		} else {
			fmt.Fprintf(stderr, "hetsgd bench: skipping %s: no --data folder holds it\n", name)
		}
	}
	// Every input is read before the report is started, so that a missing
	// or bad one stops the bench before it writes anything.
	opt := repro.Options{Quick: *quick, Seed: *seed, Log: stdout, Parts: partList}
	if *network != "" {
		m, err := loadNetwork(*network)
		if err != nil {
			return err
		}
		opt.Network, opt.NetworkSource = &m, *network
	}
	var delicious *repro.Set
	for i := range list {
		if list[i].Name == "delicious" {
			delicious = &list[i] // loaded once, for every study
		}
	}
	if (studies["lsgd"] || studies["adacons"]) && delicious == nil {
		var err error
		if delicious, err = benchSet(ctx, "delicious", *dataDir, *seed); err != nil {
			return err
		}
		if delicious == nil {
			fmt.Fprintln(stderr, "hetsgd bench: no --data folder holds delicious/: the studies skip their Delicious sections")
		}
	}
	var mnist *repro.Set
	if studies["gem"] {
		var err error
		if mnist, err = mnistSet(ctx, *dataDir); err != nil {
			return err
		}
		if mnist == nil {
			return fmt.Errorf("--study gem needs MNIST: a --data folder holding mnist/")
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stopped while reading the data: %w", err)
	}
	rep, err := report.Create(*out, *force)
	if err != nil {
		return err
	}
	// Every way out but the end drops report.md: a bench that failed or was
	// interrupted leaves no report (a complete one from before stays).
	defer rep.Abort()
	for _, st := range []struct {
		name string
		run  func() error
	}{
		{"adaptive", func() error { return repro.AdaptiveSGD(ctx, rep, list, opt) }},
		{"lsgd", func() error { return repro.LayeredSGD(ctx, rep, delicious, opt) }},
		{"gem", func() error { return repro.GEM(ctx, rep, *mnist, opt) }},
		{"adacons", func() error { return repro.AdaCons(ctx, rep, delicious, opt) }},
		{"heterogeneity", func() error { return repro.Heterogeneity(ctx, rep, list, opt) }},
	} {
		if !studies[st.name] {
			continue
		}
		// A study checks ctx only at its runs' events: one stopped before
		// it starts writes nothing.
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped before the %s study: %w", st.name, err)
		}
		if err := st.run(); err != nil {
			return err
		}
	}
	if err := rep.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*out, "report.md"))
	return err
}

// benchSet loads one of the benchmark datasets; nil when it is not available.
func benchSet(ctx context.Context, name, dataDir string, seed uint64) (*repro.Set, error) {
	switch name {
	case "bibtex":
		tr, te, err := data.Bundled("bibtex")
		if err != nil {
			return nil, err
		}
		set, err := repro.NewSet("bibtex", tr, te, "Bibtex, the standard split bundled with hetsgd (4,880 / 2,515 points, 1,836 features, 159 labels).")
		return &set, err
	case "delicious":
		if dataDir == "" {
			return nil, nil
		}
		dir := filepath.Join(dataDir, "delicious")
		if _, err := os.Stat(dir); err != nil {
			return nil, nil
		}
		tr, te, err := data.Loader{Context: ctx}.LoadDir(dir)
		if err != nil {
			return nil, err
		}
		set, err := repro.NewSet("delicious", tr, te, "Delicious, the standard split (12,920 / 3,185 points, 500 features, 983 labels).")
		return &set, err
	}
	if s, ok := synthSets[name]; ok {
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
		set, err := repro.NewSet(name, tr, te, fmt.Sprintf(
			"Synthetic %s-like data from `hetsgd data gen --like %s --scale %g --seed %d`: %d / %d points, %d features, %d labels, %.1f non-zeros and %.1f labels per point (the real set: %.1f and %.1f), power-law labels.",
			s.profile, s.profile, s.scale, seed, tr.Len(), te.Len(), tr.Features(), tr.Labels(),
			float64(tr.X.NNZ())/float64(tr.Len()), float64(tr.Y.NNZ())/float64(tr.Len()), real.AvgNNZ, real.AvgLabels))
		return &set, err
	}
	return nil, fmt.Errorf("--sets: unknown dataset %q (want bibtex, delicious, amazon-synth, delicious-200k-synth)", name)
}

// mnistSet loads MNIST from dataDir/mnist; nil when absent.
func mnistSet(ctx context.Context, dataDir string) (*repro.Set, error) {
	if dataDir == "" {
		return nil, nil
	}
	dir := filepath.Join(dataDir, "mnist")
	if _, err := os.Stat(dir); err != nil {
		return nil, nil
	}
	tr, te, err := data.Loader{Context: ctx}.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	set, err := repro.NewSet("mnist", tr, te, "MNIST (60,000 / 10,000 images, 784 pixels scaled to [0,1] as sparse features, 10 classes).")
	return &set, err
}
