package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/train"
)

func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"stats": runDataStats,
		"gen":   runDataGen,
	}
	const usage = "Usage:\n  hetsgd data stats [--format F] [--top N] [--cache MODE] FILE|DIR|bundled:NAME ...\n  hetsgd data gen --like NAME|profile:NAME|FILE|DIR|FIT.json [--scale S] [--points N] [--seed N] [--save-fit FILE] --out DIR\n\nRun \"hetsgd data stats --help\" or \"hetsgd data gen --help\" for their flags.\n"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, usage) // asked for: not an error
		return flag.ErrHelp
	}
	if len(args) == 0 || sub[args[0]] == nil {
		fmt.Fprint(stderr, usage)
		if len(args) > 0 {
			fmt.Fprintf(stderr, "\nhetsgd data: unknown subcommand %q%s\n", args[0], setting.Suggest(args[0], []string{"stats", "gen"}, ""))
		}
		return errUsage
	}
	return sub[args[0]](ctx, args[1:], stdout, stderr)
}

func runDataStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data stats", "data stats [flags] FILE|DIR|bundled:NAME ...", stderr)
	format := fs.String("format", "auto", "input format: xc, libsvm or auto")
	top := fs.Int("top", 5, "labels to list at each end of the frequency ranking")
	cache := fs.String("cache", "auto", "binary cache of text files of 8 MB or more: auto, refresh or off")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *top < 0 {
		return fmt.Errorf("--top %d: must be 0 or more", *top)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	f, err := data.ParseFormat(*format)
	if err != nil {
		return err
	}
	mode, err := data.ParseCacheMode(*cache)
	if err != nil {
		return fmt.Errorf("--cache: %w", err)
	}
	for _, path := range fs.Args() {
		if err := ctx.Err(); err != nil {
			return err
		}
		sets, err := data.Loader{Format: f, Cache: mode, Log: stderr, Context: ctx}.LoadAny(path)
		if err != nil {
			return err
		}
		for _, d := range sets {
			if err := data.Describe(d, *top).Write(stdout); err != nil {
				return err
			}
		}
	}
	return nil
}

func runDataGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data gen", "data gen --like NAME|profile:NAME|FILE|DIR|FIT.json [--scale S] [--points N] [--seed N] [--save-fit FILE] --out DIR", stderr)
	like := fs.String("like", "", "what to imitate: a paper's set ("+strings.Join(data.PaperStandInNames(), ", ")+": a stand-in built from its published statistics), a profile of the earlier independent-label generator (profile:NAME, NAME one of "+strings.Join(data.ProfileNames(), ", ")+"; a bare "+strings.Join(nonPaperProfiles(), " or ")+" too), a dataset file or folder to fit a stand-in to (a folder's test split sets the signal), or a stand-in file that --save-fit wrote")
	scale := fs.Float64("scale", 1, "multiply points, features and labels by this `factor`")
	points := fs.Int("points", 0, "training points `N` (test points in the profile's proportion), features and labels as --scale makes them (default: the scaled profile's)")
	seed := fs.Uint64("seed", 1, "`seed` of the generator (and of the fit's samples)")
	out := fs.String("out", "", "output `dir` for train.txt and test.txt")
	force := fs.Bool("force", false, "overwrite existing files in --out (and --save-fit)")
	saveFit := fs.String("save-fit", "", "write the fitted stand-in's parameters to `file` (JSON), for --like later")
	verbose := fs.Bool("v", false, "print the fit's search steps")
	speed := fs.Bool("fit-speed", true, "fit how fast and how far the default model learns too (its P@1 after one epoch and its best of ten, trained on the set and on the stand-in's samples): when the stand-in misses them, fit the speed model to them (trains the model a few hundred times; false: the fit without it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *like == "" || *out == "" && *saveFit == "" {
		fmt.Fprintln(stderr, "hetsgd data gen: --like and --out (or --save-fit) are required")
		fs.Usage()
		return errUsage
	}
	if !(*scale > 0 && *scale <= 1) {
		return fmt.Errorf("--scale %v: need a factor in (0, 1]", *scale)
	}
	if *points < 0 || *points > math.MaxInt32 {
		return fmt.Errorf("--points %d: need a count of training points in [1, %d] (0: the profile's)", *points, math.MaxInt32)
	}
	var s *data.StandIn
	if ps, err := data.PaperStandIn(*like); err == nil {
		s = ps
	} else if p, err := lookupProfile(*like); err == nil {
		if *saveFit != "" {
			return fmt.Errorf("--save-fit: --like %s is a profile, not a fit (give a dataset file or folder)", *like)
		}
		p = p.Scaled(*scale)
		if *points > 0 {
			p = p.WithPoints(*points)
		}
		train, test, err := data.GenerateDirContext(ctx, *out, p, *seed, *force)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s/train.txt and %s/test.txt (seed %d)\n\n", *out, *out, *seed)
		return data.WriteReport(stdout, train, test)
	} else if _, statErr := os.Stat(*like); statErr != nil && !strings.HasPrefix(*like, "bundled:") {
		return fmt.Errorf("--like %s: neither a paper's set (%s), a profile (profile:NAME: %s) nor a file or folder: %w", *like, strings.Join(data.PaperStandInNames(), ", "), strings.Join(data.ProfileNames(), ", "), statErr)
	} else {
		opt := data.FitOptions{Seed: *seed}
		if *verbose {
			opt.Log = stderr
		}
		if *speed {
			opt.Learn = train.LearningCurve
		}
		if s, err = (data.Loader{Log: stderr, Context: ctx}).FitAny(*like, opt); err != nil {
			return fmt.Errorf("--like %s: %w", *like, err)
		}
	}
	if *saveFit != "" {
		if err := s.Save(*saveFit, *force); err != nil {
			return fmt.Errorf("--save-fit: %w", err)
		}
		fmt.Fprintf(stdout, "wrote the stand-in's parameters to %s\n", *saveFit)
	}
	if *out == "" {
		return nil
	}
	s = s.Scaled(*scale)
	if *points > 0 {
		s = s.WithPoints(*points)
	}
	train, test, err := s.GenerateDirContext(ctx, *out, *seed, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s/train.txt and %s/test.txt (seed %d)\n\n", *out, *out, *seed)
	return data.WriteStandInReport(stdout, s, train, test)
}

// lookupProfile resolves --like profile:NAME, or a bare NAME that is not a
// paper's set, to a profile of the earlier generator: the paper's names
// mean their stand-ins, and profile:NAME keeps earlier figures
// reproducible.
func lookupProfile(like string) (data.Profile, error) {
	if name, ok := strings.CutPrefix(like, "profile:"); ok {
		return data.LookupProfile(name)
	}
	if slices.Contains(data.PaperStandInNames(), like) {
		return data.Profile{}, fmt.Errorf("%s is a paper's set", like)
	}
	return data.LookupProfile(like)
}

// nonPaperProfiles are the profiles a bare name still selects.
func nonPaperProfiles() []string {
	var names []string
	for _, n := range data.ProfileNames() {
		if !slices.Contains(data.PaperStandInNames(), n) {
			names = append(names, n)
		}
	}
	return names
}
