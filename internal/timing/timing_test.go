package timing

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Median and Best warm up once, then time reps runs (at least one); Median
// keeps the middle run and Best the shortest.
func TestRuns(t *testing.T) {
	for _, reps := range []int{0, 1, 5} {
		runs := 0
		if _, err := Median(context.Background(), func() { runs++ }, reps); err != nil || runs != 1+max(1, reps) {
			t.Errorf("Median of %d reps: %d runs, %v", reps, runs, err)
		}
		runs = 0
		Best(func() { runs++ }, reps)
		if runs != 1+max(1, reps) {
			t.Errorf("Best of %d reps: %d runs", reps, runs)
		}
	}
	// A sleep may overrun, never fall short, so the checks hold on a busy
	// machine: the median of runs of 0, 0, 100, 100 and 100 ms (after the
	// warm-up) is 100 ms or more, whatever overruns; the best of runs of 0,
	// 100, 100, 100 and 100 ms is the empty one, which only a machine that
	// held this goroutine up for 100 ms between two readings of the clock
	// would push to 100 ms (a Best that kept any other run would be there).
	runs := func(ms ...time.Duration) func() {
		i := 0
		return func() { time.Sleep(ms[i] * time.Millisecond); i++ }
	}
	if med, _ := Median(context.Background(), runs(0, 0, 0, 100, 100, 100), 5); med < 0.1 {
		t.Errorf("median %v s, want 0.1 s or more", med)
	}
	if best := Best(runs(0, 0, 100, 100, 100, 100), 5); best >= 0.1 {
		t.Errorf("best %v s, want the empty run's", best)
	}
}

// A Median whose context is done runs f no more and returns the context's
// error.
func TestMedianStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	_, err := Median(ctx, func() {
		if runs++; runs == 2 {
			cancel()
		}
	}, 10)
	if !errors.Is(err, context.Canceled) || runs != 2 {
		t.Errorf("after a cancel at the second run: %d runs, %v", runs, err)
	}
}

// The median time of a step, after one run to warm up.
func ExampleMedian() {
	sum := 0
	sec, err := Median(context.Background(), func() {
		for i := range 1000 {
			sum += i
		}
	}, 5)
	fmt.Println(err, sec > 0)
	// Output: <nil> true
}
