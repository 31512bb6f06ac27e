package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/setting"
)

func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"stats": runDataStats,
		"gen":   runDataGen,
	}
	const usage = "Usage:\n  hetsgd data stats [--format F] [--top N] [--cache MODE] FILE|DIR|bundled:NAME ...\n  hetsgd data gen --like PROFILE [--scale S] [--seed N] --out DIR\n\nRun \"hetsgd data stats --help\" or \"hetsgd data gen --help\" for their flags.\n"
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
	fs := newFlagSet("data gen", "data gen --like PROFILE [--scale S] [--points N] [--seed N] --out DIR", stderr)
	like := fs.String("like", "", "statistics to imitate: "+strings.Join(data.ProfileNames(), ", "))
	scale := fs.Float64("scale", 1, "multiply points, features and labels by this `factor`")
	points := fs.Int("points", 0, "training points `N` (test points in the profile's proportion), features and labels as --scale makes them (default: the scaled profile's)")
	seed := fs.Uint64("seed", 1, "`seed` of the generator")
	out := fs.String("out", "", "output `dir` for train.txt and test.txt")
	force := fs.Bool("force", false, "overwrite existing files in --out")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *like == "" || *out == "" {
		fmt.Fprintln(stderr, "hetsgd data gen: --like and --out are required")
		fs.Usage()
		return errUsage
	}
	p, err := data.LookupProfile(*like)
	if err != nil {
		return err
	}
	if !(*scale > 0 && *scale <= 1) {
		return fmt.Errorf("--scale %v: need a factor in (0, 1]", *scale)
	}
	if *points < 0 || *points > math.MaxInt32 {
		return fmt.Errorf("--points %d: need a count of training points in [1, %d] (0: the profile's)", *points, math.MaxInt32)
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
}
