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
	// Runs of 0, 1, 2, 3 and 4 ms after the warm-up: the median is the 2 ms
	// one (a sleep may overrun, never fall short), the best the 0 ms one.
	sleeps := []time.Duration{0, 0, 4, 1, 3, 2}
	next := func() func() {
		i := 0
		return func() { time.Sleep(sleeps[i] * time.Millisecond); i++ }
	}
	med, _ := Median(context.Background(), next(), 5)
	best := Best(next(), 5)
	if med < 2e-3 || best >= med {
		t.Errorf("median %v s, best %v s: want 2 ms or more, and less", med, best)
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
