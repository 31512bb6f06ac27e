package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/progress/stage"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/standin"
	"github.com/hetsgd/hetsgd/tfidf"
	"github.com/hetsgd/hetsgd/train"
)

func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"stats":     runDataStats,
		"gen":       runDataGen,
		"from-text": runDataFromText,
	}
	const usage = "Usage:\n  hetsgd data stats [--format F] [--top N] [--cache MODE] FILE|DIR|bundled:NAME ...\n  hetsgd data gen --like NAME|profile:NAME|FILE|DIR|FIT.json [--scale S] [--points N] [--seed N] [--save-fit FILE] --out DIR\n  hetsgd data from-text --train FILE|DIR --test FILE|DIR --out DIR [--ngram MIN,MAX] [--min-df N] [--max-features N]\n\nRun \"hetsgd data SUBCOMMAND --help\" for its flags.\n"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, usage) // asked for: not an error
		return flag.ErrHelp
	}
	if len(args) == 0 || sub[args[0]] == nil {
		fmt.Fprint(stderr, usage)
		if len(args) > 0 {
			fmt.Fprintf(stderr, "\nhetsgd data: unknown subcommand %q%s\n", args[0], setting.Suggest(args[0], []string{"stats", "gen", "from-text"}, ""))
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
	like := fs.String("like", "", "what to imitate: a paper's set ("+strings.Join(data.PaperStandInNames(), ", ")+": a stand-in built from its published statistics), a profile of the earlier independent-label generator (profile:NAME, NAME one of "+strings.Join(data.ProfileNames(), ", ")+"; a bare "+strings.Join(data.BareProfileNames(), " or ")+" too), a dataset file or folder to fit a stand-in to (a folder's test split sets the signal), or a stand-in file that --save-fit wrote")
	scale := fs.Float64("scale", 1, "multiply points, features and labels by this `factor`")
	points := fs.Int("points", 0, "training points `N` (test points in the profile's proportion), features and labels as --scale makes them (default: the scaled profile's); sets that would not fit on --out's disk are refused")
	seed := fs.Uint64("seed", 1, "`seed` of the generator (and of the fit's samples)")
	out := fs.String("out", "", "output `dir` for train.txt and test.txt")
	force := fs.Bool("force", false, "overwrite existing files in --out (and --save-fit)")
	saveFit := fs.String("save-fit", "", "write the fitted stand-in's parameters to `file` (JSON), for --like later")
	verbose := fs.Bool("v", false, "print the fit's search steps")
	speed := fs.Bool("fit-speed", true, "fit how fast and how far the default model learns too (its P@1 after one epoch and its best of ten, trained on the set and on the stand-in's samples): when the stand-in misses them, fit the speed model to them (trains the model a few hundred times; false: the fit without it)")
	mode := fs.String("progress", stage.Auto, progressHelp)
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
	// No output replaces an input (--like's file, or its folder's files,
	// and the caches the data loads), checked before any work and again
	// once the data is loaded; the sets must fit on --out's disk.
	var in atomicfile.Inputs
	in.Add("--like", *like)
	outs := func() error {
		for _, f := range []string{"train.txt", "test.txt"} {
			if p := filepath.Join(*out, f); *out == "" {
				break
			} else if filepath.Clean(*saveFit) == p || atomicfile.SameFile(*saveFit, p) {
				return fmt.Errorf("--save-fit %s is the --out set's %s: name another file", *saveFit, f)
			} else if err := in.Check("--out", p); err != nil {
				return err
			}
		}
		return in.Check("--save-fit", *saveFit)
	}
	if err := outs(); err != nil {
		return err
	}
	sized := func(s *data.StandIn) *data.StandIn {
		if s = s.Scaled(*scale); *points > 0 {
			s = s.WithPoints(*points)
		}
		return s
	}
	sizeErr := func(err error) error {
		if errors.Is(err, data.ErrTooLarge) && *points > 0 {
			return fmt.Errorf("--points %d: %w", *points, err)
		}
		return err
	}
	line, err := stage.NewLine(stderr, *mode, "hetsgd data gen")
	if err != nil {
		return err
	}
	defer line.Close()
	opt := data.GenOptions{Overwrite: *force, Progress: line}
	var s *data.StandIn
	if ps, err := data.PaperStandIn(*like); err == nil {
		s = ps
	} else if p, err := data.LookupLike(*like); err == nil {
		if *saveFit != "" {
			return fmt.Errorf("--save-fit: --like %s is a profile, not a fit (give a dataset file or folder)", *like)
		}
		p = p.Scaled(*scale)
		if *points > 0 {
			p = p.WithPoints(*points)
		}
		train, test, err := data.GenerateDirWith(ctx, *out, p, *seed, opt)
		if err != nil {
			return sizeErr(err)
		}
		line.Close()
		fmt.Fprintf(stdout, "wrote %s/train.txt and %s/test.txt (seed %d)\n\n", *out, *out, *seed)
		return data.WriteReport(stdout, train, test)
	} else if _, statErr := os.Stat(*like); statErr != nil && !strings.HasPrefix(*like, "bundled:") {
		return fmt.Errorf("--like %s: neither a paper's set (%s), a profile (profile:NAME: %s) nor a file or folder: %w", *like, strings.Join(data.PaperStandInNames(), ", "), strings.Join(data.ProfileNames(), ", "), statErr)
	} else {
		var refused error // by the fit's Check, returned as it is
		fit := standin.Options{Seed: *seed, Progress: line, Check: func(s *data.StandIn) error {
			// The data's caches are known now; the sets' size too.
			if refused = outs(); refused == nil && *out != "" {
				refused = sizeErr(sized(s).CheckSpace(*out))
			}
			return refused
		}}
		if *verbose {
			fit.Log = line
		}
		if *speed {
			fit.Learn = train.LearningCurve
		}
		if s, err = standin.FitPath(data.Loader{Log: line, Context: ctx, Opened: in.Opened}, *like, fit); err != nil {
			if refused != nil {
				return refused
			}
			return fmt.Errorf("--like %s: %w", *like, err)
		}
	}
	if *saveFit != "" {
		if err := s.Save(*saveFit, *force); err != nil {
			return fmt.Errorf("--save-fit: %w", err)
		}
		fmt.Fprintf(line.Beside(stdout), "wrote the stand-in's parameters to %s\n", *saveFit)
	}
	if *out == "" {
		return nil
	}
	s = sized(s)
	train, test, err := s.GenerateDirWith(ctx, *out, *seed, opt)
	if err != nil {
		return sizeErr(err)
	}
	line.Close()
	fmt.Fprintf(stdout, "wrote %s/train.txt and %s/test.txt (seed %d)\n\n", *out, *out, *seed)
	return data.WriteStandInReport(stdout, s, train, test)
}

// runDataFromText is "hetsgd data from-text": labelled text to a dataset
// folder and its vectorizer (package tfidf).
func runDataFromText(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data from-text", "data from-text --train FILE|DIR --test FILE|DIR --out DIR [flags]\n\nReads lines \"labels<TAB>text\" (labels comma-separated) and writes DIR/train.txt and DIR/test.txt (XC format, TF-IDF rows of word n-grams as scikit-learn's TfidfVectorizer makes them, fitted to --train) and DIR/tfidf.json (the vectorizer and the label names).", stderr)
	train, test, out := fs.String("train", "", "labelled text to fit and convert: a `file`, or a folder of them"), fs.String("test", "", "labelled text to convert: a `file`, or a folder of them"), fs.String("out", "", "output `dir`")
	o := tfidf.Defaults
	ngram := fs.String("ngram", "1,2", "word n-gram range `min,max` (ngram_range)")
	fs.IntVar(&o.MinDF, "min-df", o.MinDF, "keep the terms on at least `n` training documents (min_df)")
	fs.IntVar(&o.MaxFeatures, "max-features", 0, "keep the `n` terms most frequent in training, ties by term (0: all)")
	fs.BoolVar(&o.Sublinear, "sublinear-tf", o.Sublinear, "1 + ln(count) for a term's count (sublinear_tf)")
	force := fs.Bool("force", false, "overwrite existing files in --out")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, err := fmt.Sscanf(*ngram, "%d,%d", &o.MinN, &o.MaxN); err != nil {
		return fmt.Errorf("--ngram %q: want MIN,MAX, e.g. 1,2", *ngram)
	}
	if *train == "" || *test == "" || *out == "" {
		return fmt.Errorf("give --train, --test and --out")
	}
	c, err := tfidf.Convert(ctx, *train, *test, *out, o, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s/train.txt, %s/test.txt and %s/tfidf.json: %d terms, %d labels; %d test labels not in --train dropped\n", *out, *out, *out, len(c.Model.Terms), len(c.Model.Labels), c.Dropped)
	fmt.Fprintf(stdout, "read %.2f s, vectorized %.2f s, wrote %.2f s\n", c.Read.Seconds(), c.Vectorize.Seconds(), c.Write.Seconds())
	return nil
}
