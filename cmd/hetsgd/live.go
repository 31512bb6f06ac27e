package main

import (
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/dashboard"
)

// startDashboard serves a dashboard of one run, named name, at addr, and
// says where on stdout. It fails at once when addr cannot be listened on,
// before the run starts.
func startDashboard(addr, name string, stdout, stderr io.Writer) (*dashboard.Live, error) {
	l, err := dashboard.StartLive(addr, name)
	if err != nil {
		return nil, fmt.Errorf("--dashboard %s: %w", addr, err)
	}
	warnExposed(stderr, "train", "--dashboard", addr)
	fmt.Fprintf(stdout, "hetsgd train: dashboard at %s\n", l.URL)
	return l, nil
}
