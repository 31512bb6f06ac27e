package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/runlog"
)

// dashboardPoll is how often hetsgd dashboard looks for records appended
// to its logs: often enough to look live, rarely enough to cost nothing.
const dashboardPoll = 500 * time.Millisecond

func runDashboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dashboard", "dashboard [--addr HOST:PORT] LOG...\n\n"+
		"Serves a page that draws run logs (hetsgd train --log) and follows them: a log another\n"+
		"process is writing is shown live. Several logs are overlaid. Runs until interrupted (Ctrl-C).\n"+
		"Flags may come before or after the logs.", stderr)
	addr := fs.String("addr", dashboard.DefaultAddr, "serve the page at `host:port` (port 0: any free port); a host other than loopback makes the runs visible to the network")
	logs, err := parseLogArgs(fs, args)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		fmt.Fprintln(stderr, "hetsgd dashboard: give at least one LOG")
		fs.Usage()
		return errUsage
	}
	for _, path := range logs {
		// A mistyped name fails now, not as a warning behind a page
		// showing nothing.
		if _, err := os.Stat(path); err != nil {
			return err
		}
	}
	warnExposed(stderr, "dashboard", "--addr", *addr)

	s := dashboard.New()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // the followers warn from their goroutines
	warn := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "hetsgd dashboard: %v\n", err)
	}
	var wg sync.WaitGroup
	for i, name := range runlog.FileNames(logs) {
		run := s.AddRun(name)
		path := logs[i]
		wg.Go(func() {
			if err := s.Follow(ctx, run, path, dashboardPoll, warn); err != nil {
				warn(err) // gone between the check above and now: the page shows the others
			}
		})
	}
	err = dashboard.Serve(ctx, *addr, s, func(url string) { fmt.Fprintln(stdout, url) })
	cancel()
	wg.Wait()
	return err
}

// warnExposed warns when a dashboard's address (given as flag) is not
// loopback: the page, and the runs it shows, are then open to the network.
func warnExposed(stderr io.Writer, command, flag, addr string) {
	if !dashboard.IsLoopback(addr) {
		fmt.Fprintf(stderr, "hetsgd %s: warning: %s %s is not a loopback address: the page, and the runs it shows, are reachable from the network\n", command, flag, addr)
	}
}
