package comm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
)

// A measurement interrupted on one rank stops on every rank, soon, with an
// error wrapping context.Canceled: no rank is left waiting in a collective.
func TestMeasureNetworkCancelled(t *testing.T) {
	for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(delay, cancel)
		start := time.Now()
		errs := commtest.OnMem(3, func(c comm.Comm) error {
			own := context.Background()
			if c.Rank() == 1 {
				own = ctx // the others learn of it from rank 1
			}
			// Sizes whose whole measurement takes far longer than the delay.
			_, err := comm.MeasureNetworkContext(own, c, []int{8, 1 << 20, 16 << 20, 64 << 20}, []int{16 << 20, 64 << 20})
			return err
		})
		took := time.Since(start)
		timer.Stop()
		cancel()
		for r, err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("delay %v: rank %d: %v, want an error wrapping context.Canceled", delay, r, err)
			}
		}
		if took > delay+5*time.Second {
			t.Errorf("delay %v: the ranks stopped after %v", delay, took)
		}
	}
}
