package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hetsgd/hetsgd/dashboard"
)

// liveView is train --dashboard: a dashboard.Live showing the run, under
// the names train and resume call it by.
type liveView struct {
	live *dashboard.Live
	url  string
}

// startDashboard serves a dashboard of one run, named name, at addr, and
// says where on stdout. It fails at once when addr cannot be listened on,
// before the run starts.
func startDashboard(addr, name string, stdout, stderr io.Writer) (*liveView, error) {
	l, err := dashboard.StartLive(addr, name)
	if err != nil {
		return nil, fmt.Errorf("--dashboard %s: %w", addr, err)
	}
	warnExposed(stderr, "train", "--dashboard", addr)
	fmt.Fprintf(stdout, "hetsgd train: dashboard at %s\n", l.URL)
	return &liveView{live: l, url: l.URL}, nil
}

// publish shows one record of the log (nil: no dashboard).
func (v *liveView) publish(line []byte) {
	if v != nil {
		v.live.Publish(line)
	}
}

func (v *liveView) stop() { v.live.Stop() }

// publishFile shows the records of the log file path up to offset at: a
// continued log's records before its checkpoint.
func (v *liveView) publishFile(path string, at int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := v.live.PublishLog(f, at); err != nil {
		return fmt.Errorf("--dashboard: reading %s: %w", path, err)
	}
	return nil
}
