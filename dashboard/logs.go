package dashboard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hetsgd/hetsgd/runlog"
)

// PollInterval is how often ServeLogs looks for records appended to its
// logs: often enough to look live, rarely enough to cost nothing.
const PollInterval = 500 * time.Millisecond

// ServeLogs serves at addr a dashboard of the run logs at paths, one run
// each, named by runlog.FileNames, until ctx is done (hetsgd dashboard).
// Each log is followed (Server.Follow, every PollInterval): a log another
// process is writing shows live, several are overlaid. ready is Serve's.
// It returns Serve's error, or nil once ctx is done and the logs are no
// longer followed.
//
// What a log's follower reports goes to warn, if not nil, one call at a
// time: lines skipped, a file gone, and a log that cannot be read at all,
// which the page then leaves out while it shows the others. When no log
// can be read at the start, that is ServeLogs' error and nothing is
// served: the page would show nothing, waiting forever. A caller that
// would rather fail on a mistyped path checks the paths before.
func ServeLogs(ctx context.Context, addr string, paths []string, ready func(url string), warn func(error)) error {
	var errs []error
	for _, path := range paths {
		check := New()
		if err := check.Load(check.AddRun(path), path, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(paths) && len(errs) > 0 {
		return errors.Join(errs...)
	}
	var mu sync.Mutex // the followers warn from their goroutines
	say := func(err error) {
		if warn != nil {
			mu.Lock()
			defer mu.Unlock()
			warn(err)
		}
	}
	s := New()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, name := range runlog.FileNames(paths) {
		run, path := s.AddRun(name), paths[i]
		wg.Go(func() {
			if err := s.Follow(ctx, run, path, PollInterval, say); err != nil {
				say(err)
			}
		})
	}
	err := Serve(ctx, addr, s, ready)
	cancel()
	wg.Wait()
	return err
}
