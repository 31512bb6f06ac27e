//go:build cuda

package gpu

import (
	"context"
	"fmt"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/optim"
)

// EpochResult is a pass's figures.
type EpochResult struct {
	Samples  int
	Seconds  float64 // wall time, batches' gathering and upload included
	PerSec   float64 // samples a second
	MeanLoss float64 // over the pass's batches
}

// Epoch trains n on one pass over train, in batches of up to batch rows
// in the order of a sampler seeded by seed (as a device of the engine
// deals them), each step o's update at rate lr; it stops early, with
// ctx's error, when ctx ends. n must hold batch rows of train (NetFor).
func Epoch(ctx context.Context, n *Net, train *data.Dataset, batch int, o optim.Optimizer, lr float32, seed uint64) (EpochResult, error) {
	s := data.NewSampler(train.Len(), seed)
	b := data.NewBatch(train, batch)
	var r EpochResult
	start := time.Now()
	steps := 0
	for r.Samples < train.Len() {
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("gpu: an epoch stopped after %d samples: %w", r.Samples, err)
		}
		b.Draw(train, s, min(batch, train.Len()-r.Samples))
		if err := n.Load(&b.X, &b.Y); err != nil {
			return r, err
		}
		u := o.Fused(lr)
		loss, err := n.Step(&u)
		if err != nil {
			return r, err
		}
		r.MeanLoss += loss
		r.Samples += b.Len()
		steps++
	}
	if err := n.g.Sync(); err != nil {
		return r, err
	}
	r.Seconds = time.Since(start).Seconds()
	r.PerSec = float64(r.Samples) / r.Seconds
	r.MeanLoss /= float64(max(steps, 1))
	return r, nil
}
