package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/workload"
)

// loadModel reads a trained model: a checkpoint folder (its newest
// checkpoint's, or with which "best" its best evaluation's, best.hck), a
// checkpoint file, or an .npz that hetsgd export wrote. note says which
// model of a folder was read, for the user.
func loadModel(path, which string, note io.Writer) (*model.MLP, []float32, error) {
	file, err := modelFile(path, which)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, fmt.Errorf("--model: %w", err)
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	var cfg model.Config
	var p []float32
	switch {
	case bytes.HasPrefix(head[:n], []byte("PK")):
		fi, err := f.Stat()
		if err != nil {
			return nil, nil, fmt.Errorf("--model: %w", err)
		}
		if cfg, p, err = model.ReadNPZ(f, fi.Size()); err != nil {
			return nil, nil, fmt.Errorf("--model %s: %w", file, err)
		}
	default:
		rd, err := checkpoint.Open(file)
		if err != nil {
			return nil, nil, fmt.Errorf("--model: %w (want a checkpoint or an .npz of hetsgd export)", err)
		}
		defer rd.Close()
		if cfg, p, err = engine.LoadModel(rd); err != nil {
			return nil, nil, fmt.Errorf("--model: %w", err)
		}
		if e, ok, _ := engine.BestOf(rd); ok && which == "best" {
			fmt.Fprintf(note, "the model of the best evaluation: %s, P@1 %.4f at epoch %.2f\n", file, e.P1, e.Epoch)
		}
	}
	m, err := model.New(cfg)
	return m, p, err
}

// modelFile is the file of the model --model path and --which name: a
// checkpoint folder's newest checkpoint or its best model, else the file.
func modelFile(path, which string) (string, error) {
	switch which {
	case "last":
		file, err := checkpoint.Latest(path)
		if err != nil {
			return "", fmt.Errorf("--model: %w", err)
		}
		return file, nil
	case "best":
		if !isDir(path) {
			return "", fmt.Errorf("--which best takes a checkpoint folder (it holds best.hck beside the checkpoints), not the file %s", path)
		}
		best := checkpoint.Dir(path).Best()
		if _, err := os.Stat(best); err != nil {
			return "", fmt.Errorf("--which best: %s holds no best model (best.hck: written at a run's evaluations with --checkpoint, unless --keep-best=false)", path)
		}
		return best, nil
	}
	return "", fmt.Errorf("--which %q: want last or best", which)
}

// whichFlag registers --which, the model of a checkpoint folder to take.
func whichFlag(fs *flag.FlagSet) *string {
	return fs.String("which", "last", "the model of a checkpoint folder --model: last (its newest checkpoint's) or best (the best evaluation's, kept in best.hck)")
}

// scoring holds the flags eval and predict share: the model, the data and
// its format; and the files they name and the data's caches, as inputs
// no output may replace.
type scoring struct {
	model, data, format, which string
	in                         atomicfile.Inputs
}

func (s *scoring) register(fs *flag.FlagSet, dataUsage string) {
	fs.StringVar(&s.model, "model", "", "the trained model: a checkpoint `dir` or file (hetsgd train --checkpoint), or an .npz of hetsgd export")
	s.which = "last"
	fs.StringVar(&s.which, "which", "last", "the model of a checkpoint folder --model: last (its newest checkpoint's) or best (the best evaluation's, kept in best.hck)")
	fs.StringVar(&s.data, "data", "", "the points to score: "+dataUsage)
	fs.StringVar(&s.format, "format", "auto", "input format: xc, libsvm or auto")
}

func (s *scoring) check() error {
	if s.model == "" || s.data == "" {
		return fmt.Errorf("give --model and --data")
	}
	s.in.Add("--model", s.model)
	s.in.Add("--data", s.data)
	return nil
}

// testSet loads the data to score whole: a file, a dataset folder's test
// set, or bundled:NAME's.
func (s *scoring) testSet(ctx context.Context, cache string, stderr io.Writer) (*data.Dataset, error) {
	f, err := data.ParseFormat(s.format)
	if err != nil {
		return nil, err
	}
	mode, err := data.ParseCacheMode(cache)
	if err != nil {
		return nil, fmt.Errorf("--cache: %w", err)
	}
	sets, err := loadForStats(data.Loader{Format: f, Cache: mode, Log: stderr, Context: ctx, Opened: dataInputs(&s.in)}, s.data)
	if err != nil {
		return nil, err
	}
	return sets[len(sets)-1], nil // a folder's and a bundled set's test set
}

func checkShapes(m *model.MLP, ds *data.Dataset) error {
	c := m.Config()
	if ds.Features() != c.Inputs || ds.Labels() != c.Outputs {
		return fmt.Errorf("--data %s has %d features and %d labels; the model takes %d and gives %d", ds.Name, ds.Features(), ds.Labels(), c.Inputs, c.Outputs)
	}
	return nil
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "eval --model CHECKPOINT|MODEL.npz --data FILE|DIR|bundled:NAME [flags]", stderr)
	var sc scoring
	sc.register(fs, "a dataset `file`, a dataset folder (its test set) or bundled:NAME")
	cache := fs.String("cache", "auto", "binary cache of large text files: auto, refresh or off")
	points := fs.Int("eval-points", 0, "score only the first `n` points (0: all)")
	asJSON := fs.Bool("json", false, "print the scores as one JSON object (named as the run log's eval record names them: p1 … ndcg5, loss, test_points)")
	rank := fs.String("rank", "exact", "exact (every label ranked) or tables (SLIDE's inference: a point's labels ranked among those its hash tables over the output layer retrieve, at most --lsh-active of them; no loss)")
	tab := workload.DefaultSampling()
	seed := fs.Uint64("seed", 1, "--rank tables: seed of the tables' hash functions")
	fs.StringVar(&tab.Hash, "lsh-hash", tab.Hash, "--rank tables: hash family, dwta or srp")
	fs.IntVar(&tab.K, "lsh-k", tab.K, "--rank tables: hash values per table (`K`; dwta: 3 bits each, srp: 1)")
	fs.IntVar(&tab.L, "lsh-l", tab.L, "--rank tables: hash `tables`")
	fs.IntVar(&tab.Capacity, "lsh-capacity", tab.Capacity, "--rank tables: `rows` a bucket keeps")
	fs.Float64Var(&tab.Active, "lsh-active", tab.Active, "--rank tables: `share` of the labels a point ranks at most, those in the most tables first")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := sc.check(); err != nil {
		return err
	}
	if *rank != "exact" && *rank != "tables" {
		return fmt.Errorf("--rank %q: want exact or tables", *rank)
	}
	var onlyTables error
	fs.Visit(func(f *flag.Flag) {
		if *rank == "exact" && onlyTables == nil && (f.Name == "seed" || strings.HasPrefix(f.Name, "lsh-")) {
			onlyTables = fmt.Errorf("--%s applies with --rank tables only", f.Name)
		}
	})
	if onlyTables != nil {
		return onlyTables
	}
	if err := checkRanges(fs, engine.Ranges); err != nil {
		return err
	}
	m, p, err := loadModel(sc.model, sc.which, stderr)
	if err != nil {
		return err
	}
	test, err := sc.testSet(ctx, *cache, stderr)
	if err != nil {
		return err
	}
	if err := checkShapes(m, test); err != nil {
		return err
	}
	if test.Len() == 0 {
		return fmt.Errorf("--data %s holds no points: nothing to score", sc.data)
	}
	e := metric.NewEvaluator(m, test, 256, *points)
	if *rank == "tables" {
		t, err := tab.Tables(m, *seed)
		if err != nil {
			return err
		}
		if err := memory.Check(metric.TablesBytes(m, t), "approximate top-k's tables (fewer --lsh-l, a smaller --lsh-k)"); err != nil {
			return err
		}
		if err := e.SetTables(t); err != nil {
			return err
		}
	}
	s, err := e.EvaluateContext(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	if math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0) {
		return fmt.Errorf("--model %s: its scores overflow on --data %s (loss %v): the model's weights are too large to score with", sc.model, sc.data, s.Loss)
	}
	if *asJSON {
		// The eval record's score fields, by the same names; a model holds
		// no training progress of its own to fill the others with.
		return json.NewEncoder(stdout).Encode(struct {
			P1    float64 `json:"p1"`
			P3    float64 `json:"p3"`
			P5    float64 `json:"p5"`
			NDCG1 float64 `json:"ndcg1"`
			NDCG3 float64 `json:"ndcg3"`
			NDCG5 float64 `json:"ndcg5"`
			Loss  float64 `json:"loss"`
			Test  int     `json:"test_points"`
			// --rank tables: the share of the points' true labels the
			// tables retrieved, and the labels retrieved a point.
			Recall    *float64 `json:"recall,omitempty"`
			Retrieved *float64 `json:"retrieved,omitempty"`
		}{s.P1, s.P3, s.P5, s.NDCG1, s.NDCG3, s.NDCG5, s.Loss, s.Points, tablesOnly(*rank, s.Recall), tablesOnly(*rank, s.Retrieved)})
	}
	loss := fmt.Sprintf("loss %.4f", s.Loss)
	if *rank == "tables" {
		loss = "through the tables" // no softmax over every label: no loss
	}
	_, err = fmt.Fprintf(stdout, "%d points  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@1 %.4f  nDCG@3 %.4f  nDCG@5 %.4f  %s\n",
		s.Points, s.P1, s.P3, s.P5, s.NDCG1, s.NDCG3, s.NDCG5, loss)
	if err == nil && *rank == "tables" {
		// Why the scores may lie far below the exact ranking's: a label the
		// tables do not retrieve for a point is never ranked.
		_, err = fmt.Fprintf(stdout, "the tables retrieved %.1f%% of the points' true labels, %.0f of the %d labels a point on average (at most --lsh-active %g of them); a label not retrieved is not ranked, so P@k is SLIDE's approximate inference, not the model's accuracy: --rank exact scores every label\n",
			100*s.Recall, s.Retrieved, m.Config().Outputs, tab.Active)
	}
	return err
}

// tablesOnly is v for --rank tables, else nothing.
func tablesOnly(rank string, v float64) *float64 {
	if rank != "tables" {
		return nil
	}
	return &v
}

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("predict", "predict --model CHECKPOINT|MODEL.npz --data FILE|DIR|bundled:NAME [flags]", stderr)
	var sc scoring
	sc.register(fs, "a dataset `file` (read a chunk at a time: it may be larger than memory), a dataset folder (its test set) or bundled:NAME")
	top := fs.Int("top", 5, "labels to write per point, best first")
	outPath := fs.String("out", "", "write the predictions to `file` (default: standard output)")
	force := fs.Bool("force", false, "overwrite an existing --out")
	as := fs.String("as", "tsv", "output: tsv (point, then label:score pairs) or jsonl ({\"point\", \"labels\", \"scores\"})")
	rows := fs.Int("rows", 1024, "points scored at once")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := sc.check(); err != nil {
		return err
	}
	if err := sc.in.Check("--out", *outPath); err != nil {
		return err
	}
	switch {
	case *as != "tsv" && *as != "jsonl":
		return fmt.Errorf("--as %q: want tsv or jsonl", *as)
	case *top < 1 || *top > 1<<20:
		return fmt.Errorf("--top %d: need a whole number in [1, 1048576]", *top)
	case *rows < 1 || *rows > 1<<20:
		return fmt.Errorf("--rows %d: need a whole number in [1, 1048576]", *rows)
	}
	m, p, err := loadModel(sc.model, sc.which, stderr)
	if err != nil {
		return err
	}
	c := m.Config()
	fmtIn, err := data.ParseFormat(sc.format)
	if err != nil {
		return err
	}
	// The source: a text file streamed, or a set held whole (bundled, MNIST).
	var next func(n int) (*data.Dataset, error)
	file := sc.data
	if isDir(file) {
		if file, err = data.TestFile(file); err != nil {
			file = "" // an MNIST folder, or one without a test set: LoadDir says which
		}
	}
	if _, bundled := cutPrefix(sc.data, "bundled:"); bundled || file == "" {
		ds, err := sc.testSet(ctx, "auto", stderr)
		if err != nil {
			return err
		}
		if err := checkShapes(m, ds); err != nil {
			return err
		}
		b := data.NewBatch(ds, *rows)
		lo := 0
		next = func(n int) (*data.Dataset, error) {
			if lo == ds.Len() {
				return nil, io.EOF
			}
			hi := min(lo+n, ds.Len())
			b.Range(ds, lo, hi)
			lo = hi
			return &data.Dataset{Name: ds.Name, X: b.X, Y: b.Y}, nil
		}
	} else {
		s, err := data.OpenStream(ctx, file, fmtIn, c.Inputs, c.Outputs)
		if err != nil {
			return err
		}
		defer s.Close()
		next = s.Next
	}

	var out io.Writer = stdout
	if *outPath != "" {
		if err := sc.in.Check("--out", *outPath); err != nil { // the data's cache is known now
			return err
		}
		af, cerr := atomicfile.Create(*outPath, *force)
		if cerr != nil {
			return fmt.Errorf("--out: %w", cerr)
		}
		defer af.Abort() // nothing is left behind unless every prediction was written
		bw := bufio.NewWriterSize(af, 1<<20)
		out = bw
		defer func() {
			// err is the command's result: the predictions are put in
			// place only when every one was written.
			if err == nil {
				if err = bw.Flush(); err == nil {
					err = af.Commit()
				}
			}
		}()
	} else {
		bw := bufio.NewWriterSize(stdout, 1<<16)
		out = bw
		defer func() {
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
		}()
	}
	var line []byte
	emit := func(pr metric.Prediction) error {
		for _, v := range pr.Scores {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				// The weights are finite (loading checks), but their
				// products overflowed: no ranking can be trusted.
				return fmt.Errorf("--model %s: point %d's scores overflow (%v): the model's weights are too large to score with", sc.model, pr.Point, v)
			}
		}
		line = line[:0]
		if *as == "tsv" {
			line = strconv.AppendInt(line, int64(pr.Point), 10)
			for i, l := range pr.Labels {
				line = append(line, '\t')
				line = strconv.AppendInt(line, int64(l), 10)
				line = append(line, ':')
				line = strconv.AppendFloat(line, float64(pr.Scores[i]), 'g', -1, 32)
			}
		} else {
			line = append(line, `{"point":`...)
			line = strconv.AppendInt(line, int64(pr.Point), 10)
			line = append(line, `,"labels":[`...)
			for i, l := range pr.Labels {
				if i > 0 {
					line = append(line, ',')
				}
				line = strconv.AppendInt(line, int64(l), 10)
			}
			line = append(line, `],"scores":[`...)
			for i, s := range pr.Scores {
				if i > 0 {
					line = append(line, ',')
				}
				line = strconv.AppendFloat(line, float64(s), 'g', -1, 32)
			}
			line = append(line, "]}"...)
		}
		line = append(line, '\n')
		_, err := out.Write(line)
		return err
	}
	if err := metric.Predict(ctx, m, p, *top, *rows, next, emit); err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	return nil
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
	m, p, err := loadModel(*modelPath, *which, stderr)
	if err != nil {
		return err
	}
	af, err := atomicfile.Create(*outPath, *force)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer af.Abort()
	// A large model takes seconds to write: a signal stops it, and the
	// archive is then not put in place.
	bw := bufio.NewWriterSize(ctxWriter{ctx, af}, 1<<20)
	if err := model.WriteNPZ(bw, m.Config(), p); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := af.Commit(); err != nil {
		return err
	}
	c := m.Config()
	_, err = fmt.Fprintf(stdout, "wrote %s: %d features, hidden %v, %d labels (%d parameters); load it with numpy.load\n", *outPath, c.Inputs, c.Hidden, c.Outputs, m.NumParams())
	return err
}
