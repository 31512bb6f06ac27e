package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"
)

// xmlWorkload is the network f names on the two sets, evaluated in
// batches of at least 256 rows.
func (f *Settings) xmlWorkload(trainSet, testSet *data.Dataset, batch int) (*workload.XML, error) {
	w, err := workload.NewXML(trainSet, testSet, f.Hidden, f.Dropout, f.EvalPoints, max(batch, 256))
	if err != nil {
		return nil, err
	}
	return w, w.SetPropensity(f.Propensity)
}

// BuildWorkload loads the data and builds what the devices train.
func (f *Settings) BuildWorkload(ctx context.Context, format data.Format, batch int, in *atomicfile.Inputs, stderr io.Writer) (engine.Workload, string, error) {
	switch f.Workload {
	case "regression":
		if f.Dim < 1 {
			return nil, "", fmt.Errorf("--dim %d: need at least 1", f.Dim)
		}
		w := &workload.Regression{D: f.Dim, Points: 10000, Rule: f.StepRule}
		if err := w.CheckRule(); err != nil {
			return nil, "", fmt.Errorf("--step-rule %q: want %s or %s", f.StepRule, workload.RuleDistance, workload.RuleLoss)
		}
		return w, fmt.Sprintf("linear regression in %d dimensions", f.Dim), nil
	case "xml":
	default:
		return nil, "", fmt.Errorf("--workload %q: want xml or regression", f.Workload)
	}
	if f.Output != "dense" && f.Output != "lsh" {
		return nil, "", fmt.Errorf("--output %q: want dense or lsh", f.Output)
	}
	var backend workload.Backend
	switch f.Backend {
	case "cpu":
	case "gpu":
		// Before the data loads: a machine without a GPU hears so at once.
		if f.Output == "lsh" {
			return nil, "", errors.New("--backend gpu: the sampled output layer (--output lsh) runs on the host's cores only")
		}
		b, err := openGPU()
		if err != nil {
			return nil, "", fmt.Errorf("--backend gpu: %w", err)
		}
		backend = b
		fmt.Fprintf(stderr, "computing the gradients on %s\n", b.Name())
	default:
		return nil, "", fmt.Errorf("--backend %q: want cpu or gpu", f.Backend)
	}
	mode, err := data.ParseCacheMode(f.Cache)
	if err != nil {
		return nil, "", fmt.Errorf("--cache: %w", err)
	}
	l := data.Loader{Format: format, Cache: mode, Log: stderr, Context: ctx, Opened: in.Opened}
	trainSet, testSet, source, err := LoadData(l, f.TrainPath, f.TestPath, f.DataDir)
	if err != nil {
		return nil, "", err
	}
	w, err := f.xmlWorkload(trainSet, testSet, batch)
	if err == nil && f.Output == "lsh" {
		if f.slideHashing {
			var name string
			f.LSH, name = f.LSH.SLIDEFor(trainSet.Labels())
			if name == "" {
				name = fmt.Sprintf("%d labels, a data set SLIDE's configs do not name: its Amazon-670K setting", trainSet.Labels())
			}
			fmt.Fprintf(stderr, "%s: SLIDE's hashing for %s (--lsh-hash %s --lsh-k %d --lsh-l %d --lsh-capacity %d)\n",
				f.Strategy, name, f.LSH.Hash, f.LSH.K, f.LSH.L, f.LSH.Capacity)
		}
		err = w.SetSampling(f.LSH)
	}
	if err == nil && backend != nil {
		err = w.SetBackend(backend)
	}
	return w, source, err
}

func LoadData(l data.Loader, trainPath, testPath, dir string) (trainSet, testSet *data.Dataset, source string, err error) {
	switch {
	case dir != "" && (trainPath != "" || testPath != ""):
		return nil, nil, "", errors.New("give either --data or --train/--test, not both")
	case dir != "":
		trainSet, testSet, err = l.LoadDir(dir)
		return trainSet, testSet, dir, err
	case trainPath != "" && testPath != "":
		trainSet, testSet, err = l.LoadPair(trainPath, testPath)
		return trainSet, testSet, trainPath, err
	case trainPath != "" || testPath != "":
		return nil, nil, "", errors.New("--train and --test go together (or use --data DIR)")
	}
	trainSet, testSet, err = data.Bundled(BundledDefault)
	return trainSet, testSet, "bundled " + BundledDefault, err
}

// ConfigRecord is the run log's first record: the engine's account of the
// run, with the data's source, the tool's version and the run's settings.
func ConfigRecord(version string, f Settings, cfg engine.Config, source string, w engine.Workload, loadSeconds float64, settings runlog.Settings) (runlog.Config, error) {
	rec, err := engine.Record(cfg, w)
	if err != nil {
		return rec, err
	}
	rec.Version, rec.Command, rec.Settings = version, "train", settings
	rec.Data, rec.Train, rec.Test = source, f.TrainPath, f.TestPath
	if x, ok := w.(*workload.XML); ok {
		rec.DataDigest = DataDigest(x)
	}
	if cfg.Clock != engine.Virtual {
		rec.Time = time.Now().UTC().Format(time.RFC3339)
		rec.LoadSeconds = loadSeconds
	}
	return rec, nil
}
