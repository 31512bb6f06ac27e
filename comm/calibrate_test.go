package comm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
	"github.com/hetsgd/hetsgd/internal/testdata"
)

// A measurement interrupted on one rank stops on every rank with an error
// wrapping context.Canceled: no rank is left waiting in a collective (that
// would hang the test until testdata.Hang; the test does not time the
// stop).
func TestMeasureNetworkCancelled(t *testing.T) {
	for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(delay, cancel) // any time: before the measurement, or during it
		ended := make(chan []error, 1)
		go func() {
			ended <- commtest.OnMem(3, func(c comm.Comm) error {
				own := context.Background()
				if c.Rank() == 1 {
					own = ctx // the others learn of it from rank 1
				}
				// Sizes whose whole measurement takes far longer than the delay.
				_, err := comm.MeasureNetworkContext(own, c, []int{8, 1 << 20, 16 << 20, 64 << 20}, []int{16 << 20, 64 << 20})
				return err
			})
		}()
		errs := testdata.Recv(t, ended, fmt.Sprintf("delay %v: the ranks' stop", delay))
		timer.Stop()
		cancel()
		for r, err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("delay %v: rank %d: %v, want an error wrapping context.Canceled", delay, r, err)
			}
		}
	}
}
