package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
)

func runDashboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dashboard", "dashboard [--addr HOST:PORT | --snapshot FILE.html] LOG...\n\n"+
		"Serves a page that draws run logs (hetsgd train --log) and follows them: a log another\n"+
		"process is writing is shown live. Several logs are overlaid. Runs until interrupted (Ctrl-C).\n"+
		"--snapshot writes the page of the logs as they are now instead, one file that needs no server\n"+
		"(for a screenshot: chromium --headless --screenshot FILE.html). Flags may come before or after the logs.", stderr)
	addr := fs.String("addr", dashboard.DefaultAddr, "serve the page at `host:port` (port 0: any free port); a host other than loopback makes the runs visible to the network")
	snapshot := fs.String("snapshot", "", "write the page of the logs as they are now to `file` (self-contained HTML), and exit")
	force := fs.Bool("force", false, "overwrite an existing --snapshot file")
	logs, err := parseLogArgs(fs, args)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		fmt.Fprintln(stderr, "hetsgd dashboard: give at least one LOG")
		fs.Usage()
		return errUsage
	}
	if *force && *snapshot == "" {
		return fmt.Errorf("--force applies with --snapshot only (the file it would overwrite)")
	}
	for _, path := range logs {
		// A mistyped name fails now, not as a warning behind a page
		// showing the other logs.
		if _, err := os.Stat(path); err != nil {
			return err
		}
	}
	warn := func(err error) { fmt.Fprintf(stderr, "hetsgd dashboard: %s\n", message(err)) }
	if *snapshot != "" {
		var in atomicfile.Inputs
		for _, path := range logs {
			in.Add("LOG", path)
		}
		if err := in.Check("--snapshot", *snapshot); err != nil {
			return err
		}
		return writeOut(ctx, "--snapshot", *snapshot, *force, func(w io.Writer) error { return dashboard.WriteSnapshot(w, logs, time.Now(), warn) })
	}
	warnExposed(stderr, "dashboard", "--addr", *addr)
	return dashboard.ServeLogs(ctx, *addr, logs, func(url string) { fmt.Fprintln(stdout, url) }, warn)
}

// warnExposed warns when a dashboard's address (given as flag) is not
// loopback: the page, and the runs it shows, are then open to the network.
func warnExposed(stderr io.Writer, command, flag, addr string) {
	if !dashboard.IsLoopback(addr) {
		fmt.Fprintf(stderr, "hetsgd %s: warning: %s %s is not a loopback address: the page, and the runs it shows, are reachable from the network\n", command, flag, addr)
	}
}
