package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/report"
	"github.com/hetsgd/hetsgd/repro"
	"github.com/hetsgd/hetsgd/train"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", "bench --out DIR [--data DIR] [--sets LIST] [--quick]", stderr)
	out := fs.String("out", "", "report `folder` (report.md, figures, runs/*.jsonl)")
	dataDir := fs.String("data", os.Getenv("HETSGD_DATA"), "`folder` holding reference datasets (delicious/ with train.txt and test.txt); default $HETSGD_DATA")
	sets := fs.String("sets", "bibtex,delicious,amazon-synth", "datasets, comma-separated: of the adaptive and heterogeneity studies bibtex (bundled), delicious (from --data), amazon-synth, delicious-200k-synth (generated); of the paper study "+strings.Join(repro.PaperSetNames(), ", ")+" (from --data, written there by hetsgd data gen --like NAME --out DIR/NAME; default: those --data holds)")
	study := fs.String("study", "adaptive", "which studies to run, comma-separated: adaptive, lsgd, gem, adacons (the papers'), heterogeneity (every strategy at its defaults on unequal devices), paper (Adaptive SGD's large experiments on the papers' sets at full scale), or all")
	quick := fs.Bool("quick", false, "tiny budgets and few settings: a smoke test of the pipeline, not a result")
	seed := fs.Uint64("seed", 1, "`seed` of every run")
	force := fs.Bool("force", false, "overwrite an existing report in --out")
	reuse := fs.Bool("reuse", false, "read back each run whose log in --out/runs is complete and of the same configuration instead of running it again, so that a bench stopped part-way carries on where it was (the gem and adacons studies run every run again)")
	parts := fs.String("parts", "", "only these sections, comma-separated: of the heterogeneity study "+strings.Join(repro.HeterogeneityParts, ", ")+"; of the paper study "+strings.Join(repro.PaperParts, ", ")+" (crossbow: CROSSBOW in the equal-time section); a study none of whose sections is named runs whole (default: all)")
	network := fs.String("network", "", "lsgd study: the links within and between nodes from `file` (hetsgd calibrate --network) instead of PCIe and 25 Gb/s Ethernet")
	mode := fs.String("progress", stage.Auto, progressHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stderr, "hetsgd bench: --out is required")
		fs.Usage()
		return errUsage
	}
	sel, err := repro.Select(*study, *sets, train.Visited(fs)["sets"], *parts)
	if err != nil {
		return err
	}
	line, err := stage.NewLine(stderr, *mode, "hetsgd bench")
	if err != nil {
		return err
	}
	defer line.Close()
	var in atomicfile.Inputs
	if *dataDir != "" {
		for _, set := range append([]string{"bibtex", "delicious", "mnist"}, repro.PaperSetNames()...) {
			in.Add("--data set", filepath.Join(*dataDir, set))
		}
	}
	in.Add("--network file", *network)
	if err := in.Check("--out", *out); err != nil {
		return err
	}
	if sel.SetsIgnored {
		fmt.Fprintf(line, "hetsgd bench: warning: --sets applies to the adaptive, heterogeneity and paper studies; ignored\n")
	}
	// Every input is read before the report is started, so that a missing
	// or bad one stops the bench before it writes anything.
	input, err := repro.LoadInputs(ctx, sel, *dataDir, *seed, train.Visited(fs)["sets"],
		func(s string) { line.Stage(s, 0, "") }, func(s string) { fmt.Fprintf(line, "hetsgd bench: %s\n", s) })
	if err != nil {
		return err
	}
	opt := repro.Options{Quick: *quick, Seed: *seed, Log: line.Beside(stdout), Parts: sel.Parts, Reuse: *reuse, Progress: line}
	if *network != "" {
		m, err := train.LoadNetwork(*network)
		if err != nil {
			return err
		}
		opt.Network, opt.NetworkSource = &m, *network
	}
	rep, err := report.Create(*out, *force)
	if err != nil {
		return err
	}
	// Every way out but the end drops report.md: a bench that failed or was
	// interrupted leaves no report (a complete one from before stays).
	defer rep.Abort()
	if err := repro.Run(ctx, rep, sel.Studies, input, opt); err != nil {
		return err
	}
	line.Close()
	if err := rep.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*out, "report.md"))
	return err
}
