package timing

import (
	"context"
	"slices"
	"time"
)

// Median runs f once to warm up, then reps times (at least once), and
// returns the median duration in seconds. It stops before any run of f once
// ctx is done, with ctx's error: a measurement of long runs ends at once
// when it is interrupted.
func Median(ctx context.Context, f func(), reps int) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f()
	t := make([]float64, max(1, reps))
	for i := range t {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		f()
		t[i] = time.Since(start).Seconds()
	}
	slices.Sort(t)
	return t[len(t)/2], nil
}

// Best runs f once to warm up, then reps times (at least once), and
// returns the shortest duration in seconds.
func Best(f func(), reps int) float64 {
	f()
	best := 0.0
	for i := range max(1, reps) {
		start := time.Now()
		f()
		if t := time.Since(start).Seconds(); i == 0 || t < best {
			best = t
		}
	}
	return best
}
