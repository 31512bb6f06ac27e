package engine

import (
	"context"
	"sync"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/runlog"
)

// layeredInProcess reports whether a run takes Layered SGD's path between
// in-process ranks: a real-clock run in one process of a strategy that uses
// groups (strategy.Info's Groups), split into several nodes.
func layeredInProcess(cfg Config, groups bool) bool {
	return cfg.Clock == Real && (cfg.World == nil || cfg.World.Size() == 1) && groups && !cfg.TimingOnly &&
		cfg.Net.GroupSize > 0 && cfg.Net.GroupSize < cfg.Devices
}

// runRanks runs cfg in one process as it runs across machines: a rank per
// device, goroutines exchanging through comm.Mem, so that Layered SGD's
// hierarchical all-reduce — reduce to each node's communicator, all-reduce
// among the communicators overlapped with the next batch's preparation,
// broadcast back — is the one the ranks of an MPI job take, with its
// timings. Rank 0 drives, writes the log and returns the result.
func runRanks(ctx context.Context, cfg Config, w Workload, log *runlog.Log, obs Observer) (*Result, error) {
	var res *Result
	errs := make([]error, cfg.Devices)
	var wg sync.WaitGroup
	for r, c := range comm.Mem(cfg.Devices) {
		wg.Go(func() {
			defer c.Close()
			rc := cfg
			rc.World = c
			if r == 0 {
				res, errs[0] = Run(ctx, rc, w, log, obs)
			} else {
				_, errs[r] = Run(ctx, rc, w, nil, nil)
			}
		})
	}
	wg.Wait()
	// Rank 0's error says most; another rank's says why rank 0 could not go on.
	for _, e := range errs {
		if e != nil {
			return res, e
		}
	}
	return res, nil
}
