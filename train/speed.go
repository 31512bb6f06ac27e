package train

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/engine"
)

// LearningCurve is the P@1 on testSet, after each of the given number of
// epochs on trainSet, of the model hetsgd train trains when given nothing
// but the data and the seed (the default strategy on one device, the
// default network, optimizer, learning rate and batch): how fast and how
// far that model learns the set. data gen --like fits a stand-in's speed
// on it (standin.Options.Learn). It stops with ctx's error when ctx ends.
func LearningCurve(ctx context.Context, trainSet, testSet *data.Dataset, epochs int, seed uint64) ([]float64, error) {
	var s Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	if err := fs.Parse([]string{"--epochs", strconv.Itoa(epochs), "--eval-every", "1", "--seed", strconv.FormatUint(seed, 10)}); err != nil {
		return nil, err
	}
	cfg, err := s.EngineConfig(fs, comm.Self(), io.Discard)
	if err != nil {
		return nil, err
	}
	w, err := s.xmlWorkload(trainSet, testSet, cfg.Batch) // as Run builds it
	if err != nil {
		return nil, err
	}
	res, err := engine.Run(ctx, cfg, w, nil, nil)
	if err != nil {
		return nil, err
	}
	var p1 []float64
	for _, e := range res.Evals {
		if e.Epoch > 0 {
			p1 = append(p1, e.P1)
		}
	}
	if len(p1) != epochs {
		return nil, fmt.Errorf("train: %d epochs on %s: %d evaluations", epochs, trainSet.Name, len(p1))
	}
	return p1, nil
}
