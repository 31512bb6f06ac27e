package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/train"
	"github.com/hetsgd/hetsgd/trained"
)

// openModel opens the model --model and --which name (package trained),
// its parameters not yet read (trained.Model.ReadParams), its refusals
// told in the flags' words, and says on note which model of a folder it
// took.
func openModel(path, which string, note io.Writer) (*trained.Model, error) {
	m, err := trained.Open(path, trained.Which(which))
	var npz *trained.NPZError
	switch {
	case errors.Is(err, trained.ErrWhich):
		return nil, fmt.Errorf("--which %q: want last or best", which)
	case errors.Is(err, trained.ErrNotFolder):
		return nil, fmt.Errorf("--which best takes a checkpoint folder (it holds best.hck beside the checkpoints), not the file %s", path)
	case errors.Is(err, trained.ErrNoBest):
		return nil, fmt.Errorf("--which best: %s holds no best model (best.hck: written at a run's evaluations with --checkpoint, unless --keep-best=false)", path)
	case errors.As(err, &npz):
		return nil, fmt.Errorf("--model %s: %w", npz.File, npz.Err)
	case err != nil:
		return nil, fmt.Errorf("--model: %w", err)
	}
	if m.Scored != nil && trained.Which(which) == trained.Best {
		fmt.Fprintf(note, "the model of the best evaluation: %s, P@1 %.4f at epoch %.2f\n", m.File, m.Scored.P1, m.Scored.Epoch)
	}
	return m, nil
}

// readParams reads m's parameters once use's memory is known to be there.
func readParams(m *trained.Model, use trained.Use) error {
	var npz *trained.NPZError
	if err := m.ReadParams(use); errors.As(err, &npz) {
		return fmt.Errorf("--model %s: %w", npz.File, npz.Err)
	} else if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	return nil
}

// whichFlag registers --which, the model of a checkpoint folder to take.
func whichFlag(fs *flag.FlagSet) *string {
	return fs.String("which", "last", "the model of a checkpoint folder --model: last (its newest checkpoint's) or best (the best evaluation's, kept in best.hck)")
}

// scoring holds the flags eval and predict share: the model, the data and
// its format; and the files they name and the data's caches, as inputs
// no output may replace.
type scoring struct {
	model, data, format string
	which               *string
	in                  atomicfile.Inputs
}

func (s *scoring) register(fs *flag.FlagSet, dataUsage string) {
	fs.StringVar(&s.model, "model", "", "the trained model: a checkpoint `dir` or file (hetsgd train --checkpoint), or an .npz of hetsgd export")
	s.which = whichFlag(fs)
	fs.StringVar(&s.data, "data", "", "the points to score: "+dataUsage+"; - reads the standard input")
	fs.StringVar(&s.format, "format", "auto", "input format: xc, libsvm (feature ids from 1), libsvm0 (from 0) or auto (xc or libsvm)")
}

func (s *scoring) check(needData bool) error {
	if s.model == "" || needData && s.data == "" {
		return fmt.Errorf("give --model and --data")
	}
	s.in.Add("--model", s.model)
	s.in.Add("--data", s.data)
	return nil
}

// load loads path as data.Loader.LoadAny does, in the --format given: a
// file, or a dataset folder's or bundled:NAME's training and test sets
// (the data to score is the last).
func (s *scoring) load(ctx context.Context, path, cache string, stderr io.Writer) ([]*data.Dataset, error) {
	f, err := data.ParseFormat(s.format)
	if err != nil {
		return nil, err
	}
	mode, err := data.ParseCacheMode(cache)
	if err != nil {
		return nil, fmt.Errorf("--cache: %w", err)
	}
	return data.Loader{Format: f, Cache: mode, Log: stderr, Context: ctx, Opened: s.in.Opened}.LoadAny(path)
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "eval --model CHECKPOINT|MODEL.npz [--data FILE|DIR|bundled:NAME|-] [flags]", stderr)
	var sc scoring
	sc.register(fs, "a dataset `file`, a dataset folder (its test set) or bundled:NAME (default: the test set the model's run scored it on)")
	cache := fs.String("cache", "auto", "binary cache of large text files: auto, refresh or off")
	points := fs.Int("eval-points", 0, "score only the first `n` points (0: all)")
	asJSON := fs.Bool("json", false, "print the scores as one JSON object (named as the run log's eval record names them: p1 … ndcg5, psp1 … psndcg5, loss, test_points)")
	prop := metric.DefaultPropensity
	fs.Var(&prop, "propensity", "the label propensity model of PSP@k and PSnDCG@k: `A,B`, or xc (0.55,1.5), amazon (0.6,2.6) or wikipedia (0.5,0.4), as hetsgd train's --propensity")
	trainPath := fs.String("train", "", "the training set `file` whose label counts fit the propensities of PSP@k and PSnDCG@k (default: --data's training split, when it names a dataset folder or bundled:NAME; otherwise they are not scored)")
	var rk train.Ranking
	rk.Register(fs, "; no loss")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := sc.check(false); err != nil {
		return err
	}
	if err := rk.Check(fs); err != nil {
		return err
	}
	m, err := openModel(sc.model, *sc.which, stderr)
	if err != nil {
		return err
	}
	if sc.data == "" {
		// The test set the model's run scored it on, as its file records.
		if sc.data = m.TestData; sc.data == "" {
			return fmt.Errorf("give --data: %s does not record the test set its run scored it on (an archive without a card, or a checkpoint of an earlier hetsgd)", m.File)
		}
		if !train.Visited(fs)["format"] && m.TestFormat != "" {
			sc.format = m.TestFormat
		}
		fmt.Fprintf(stderr, "hetsgd eval: scoring on %s, the test set the model's run scored it on (--data scores another)\n", sc.data)
	}
	sets, err := sc.load(ctx, sc.data, *cache, stderr)
	if err != nil {
		return err
	}
	test, trainSets := sets[len(sets)-1], sets[:len(sets)-1] // a folder's training set, if any
	if *trainPath != "" {
		sc.in.Add("--train", *trainPath)
		if trainSets, err = sc.load(ctx, *trainPath, *cache, stderr); err != nil {
			return fmt.Errorf("--train: %w", err)
		}
	}
	use := trained.Use{What: "scoring", Rows: trained.EvalRows, Held: test.Bytes(), Fix: "score a smaller test set"}
	if err := readParams(m, use); err != nil {
		return err
	}
	e, err := m.NewEvaluator(test, *points)
	switch {
	case errors.Is(err, trained.ErrNoPoints):
		return fmt.Errorf("--data %s holds no points: nothing to score", sc.data)
	case errors.Is(err, data.ErrNoLabels):
		return err // it names the data
	case err != nil:
		return fmt.Errorf("--data %w", err) // the data and the model's shapes
	}
	if len(trainSets) > 0 {
		if err := e.ScorePropensity(trainSets[0], prop); err != nil {
			return err
		}
	}
	tables := rk.Rank == "tables"
	if tables {
		t, err := rk.Tables(m.MLP)
		if err != nil {
			return err
		}
		if err := memory.Check(memory.Add(use.Need(m.MLP), metric.TablesBytes(m.MLP, *t)), "scoring through approximate top-k's tables"); err != nil {
			return fmt.Errorf("%w: fewer --lsh-l, a smaller --lsh-k", err)
		}
		if err := e.SetTables(*t); err != nil {
			return err
		}
	}
	s, err := m.Evaluate(ctx, e)
	switch {
	case errors.Is(err, trained.ErrOverflow):
		return fmt.Errorf("--model %s: its scores overflow on --data %s (loss %v): the model's weights are too large to score with", sc.model, sc.data, s.Loss)
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%w: %v", errInterrupted, err)
	case err != nil:
		return err
	case *asJSON:
		return s.WriteJSON(stdout, tables)
	}
	err = s.WriteText(stdout, tables)
	if err == nil && tables {
		// Why the scores may lie far below the exact ranking's: a label the
		// tables do not retrieve for a point is never ranked.
		_, err = fmt.Fprintf(stdout, "the tables retrieved %.1f%% of the points' true labels, %.0f of the %d labels a point on average (at most --lsh-active %g of them); a label not retrieved is not ranked, so P@k is SLIDE's approximate inference, not the model's accuracy: --rank exact scores every label\n",
			100*s.Recall, s.Retrieved, m.Config().Outputs, rk.Sampling.Active)
	}
	return err
}

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("predict", "predict --model CHECKPOINT|MODEL.npz --data FILE|DIR|bundled:NAME|- [flags]\n  or: predict --model CHECKPOINT|MODEL.npz --text FILE|- [flags]", stderr)
	var sc scoring
	sc.register(fs, "a dataset `file` (read a chunk at a time: it may be larger than memory), a dataset folder (its test set) or bundled:NAME")
	text := fs.String("text", "", "score text instead of --data, with the model's vectorizer (a model trained on a set of hetsgd data from-text): a document a line (after the line's first tab, if any: labels<TAB>text), from `file` or - (the standard input); the labels are written by name")
	top := fs.Int("top", 5, "labels to write per point, best first")
	outPath := fs.String("out", "", "write the predictions to `file` (default: standard output)")
	force := fs.Bool("force", false, "overwrite an existing --out")
	as := fs.String("as", "tsv", "output: tsv (point, then label:score pairs) or jsonl ({\"point\", \"labels\", \"scores\"})")
	rows := fs.Int("rows", 1024, "points scored at once")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := sc.check(*text == ""); err != nil {
		return err
	}
	if *text != "" && sc.data != "" {
		return fmt.Errorf("give --data or --text, not both")
	}
	sc.in.Add("--text", *text)
	if err := sc.in.Check("--out", *outPath); err != nil {
		return err
	}
	switch {
	case !metric.PredictionFormat(*as).Valid():
		return fmt.Errorf("--as %q: want tsv or jsonl", *as)
	case *top < 1 || *top > 1<<20:
		return fmt.Errorf("--top %d: need a whole number in [1, 1048576]", *top)
	case *rows < 1 || *rows > 1<<20:
		return fmt.Errorf("--rows %d: need a whole number in [1, 1048576]", *rows)
	}
	m, err := openModel(sc.model, *sc.which, stderr)
	if err != nil {
		return err
	}
	fmtIn, err := data.ParseFormat(sc.format)
	if err != nil {
		return err
	}
	use := trained.Use{What: "predicting", Rows: *rows, Fix: "score fewer points at once (--rows)"}
	// The source: a text file streamed, or a set held whole (bundled, MNIST).
	var next func(n int) (*data.Dataset, error)
	var names []string
	file := sc.data
	if *text != "" {
		t, err := m.Text()
		if err != nil {
			return fmt.Errorf("--text: %w", err)
		}
		r, err := data.OpenFile(ctx, *text)
		if err != nil {
			return fmt.Errorf("--text: %w", err)
		}
		defer r.Close()
		name := *text
		if name == data.Stdin {
			name = "standard input"
		}
		next, names = t.Reader(ctx, r, name), t.Labels
	} else if atomicfile.IsDir(file) {
		if f, err := data.TestFile(file); err == nil {
			file = f
		} else {
			file = "" // an MNIST folder, or one without a test set: LoadDir says which
		}
	}
	if _, bundled := strings.CutPrefix(sc.data, "bundled:"); next != nil {
	} else if bundled || file == "" {
		sets, err := sc.load(ctx, sc.data, "auto", stderr)
		if err != nil {
			return err
		}
		ds := sets[len(sets)-1]
		if err := m.Fits(ds); err != nil {
			return fmt.Errorf("--data %w", err)
		}
		use.Held = ds.Bytes()
		next = data.Chunks(ds, *rows)
	} else {
		s, err := data.OpenStream(ctx, file, fmtIn, m.Config().Inputs, m.Config().Outputs)
		if err != nil {
			return err
		}
		defer s.Close()
		next = s.Next
	}
	if err := readParams(m, use); err != nil {
		return err
	}
	predict := func(w io.Writer) error {
		pw, err := metric.NewPredictionWriter(w, metric.PredictionFormat(*as))
		if err != nil {
			return err
		}
		if names != nil {
			pw.SetNames(names)
		}
		return metric.Predict(ctx, m.MLP, m.Params, *top, *rows, next, pw.Write)
	}
	if *outPath == "" {
		bw := bufio.NewWriterSize(stdout, 1<<16)
		err = predict(bw)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
	} else if err = sc.in.Check("--out", *outPath); err == nil { // the data's cache is known now
		// A signal stops metric.Predict between chunks, not the writes.
		err = writeOut(context.Background(), "--out", *outPath, *force, predict)
	}
	var overflow *metric.OverflowError
	switch {
	case errors.As(err, &overflow):
		return fmt.Errorf("--model %s: %w", sc.model, overflow)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %v", errInterrupted, err)
	}
	return err
}

// writeOut writes the output flag names, path, with write, atomically
// (atomicfile.WriteWith).
func writeOut(ctx context.Context, flag, path string, force bool, write func(io.Writer) error) error {
	if err := atomicfile.CheckTarget(path, force); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return atomicfile.WriteWith(ctx, path, force, write)
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", "export --model CHECKPOINT --out MODEL.npz", stderr)
	modelPath := fs.String("model", "", "the trained model: a checkpoint `dir` or file (hetsgd train --checkpoint)")
	which := whichFlag(fs)
	outPath := fs.String("out", "", "the NumPy archive to write (`file`.npz)")
	force := fs.Bool("force", false, "overwrite an existing --out")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *modelPath == "" || *outPath == "" {
		return fmt.Errorf("give --model and --out")
	}
	var in atomicfile.Inputs
	in.Add("--model", *modelPath)
	if err := in.Check("--out", *outPath); err != nil {
		return err
	}
	m, err := openModel(*modelPath, *which, stderr)
	if err != nil {
		return err
	}
	if err := readParams(m, trained.Use{What: "exporting", Export: true, Fix: "export on a machine with more memory"}); err != nil {
		return err
	}
	// A large model takes seconds to write: a signal stops it, and the
	// archive is then not put in place.
	err = writeOut(ctx, "--out", *outPath, *force, func(w io.Writer) error {
		err := m.WriteNPZ(w, m.Card(version, time.Now()))
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	})
	if err != nil {
		return err
	}
	c := m.Config()
	_, err = fmt.Fprintf(stdout, "wrote %s: %d features, hidden %v, %d labels (%d parameters), with its model card; load it with numpy.load\n", *outPath, c.Inputs, c.Hidden, c.Outputs, m.NumParams())
	return err
}
