package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hetsgd/hetsgd/dashboard"
)

// liveView is train --dashboard: a dashboard server showing one run, whose
// log passes it every record (runlog.Log.Also).
type liveView struct {
	s    *dashboard.Server
	run  int
	url  string
	stop func() // shuts the server down and waits for it
}

// startDashboard serves a dashboard of one run, named name, at addr, and
// says where on stdout. It fails at once when addr cannot be listened on,
// before the run starts.
func startDashboard(addr, name string, stdout, stderr io.Writer) (*liveView, error) {
	s := dashboard.New()
	v := &liveView{s: s, run: s.AddRun(name)}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- dashboard.Serve(ctx, addr, s, func(url string) { ready <- url }) }()
	select {
	case v.url = <-ready:
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("--dashboard %s: %w", addr, err)
	}
	v.stop = func() {
		cancel()
		<-done
	}
	warnExposed(stderr, "train", "--dashboard", addr)
	fmt.Fprintf(stdout, "hetsgd train: dashboard at %s\n", v.url)
	return v, nil
}

// publish shows one record of the log (nil: no dashboard).
func (v *liveView) publish(line []byte) {
	if v != nil {
		v.s.Publish(v.run, line)
	}
}

// publishFile shows the records of the log file path up to offset at: a
// continued log's records before its checkpoint.
func (v *liveView) publishFile(path string, at int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, at)
	if _, err := io.ReadFull(f, b); err != nil {
		return fmt.Errorf("--dashboard: reading %s: %w", path, err)
	}
	for line := range bytes.Lines(b) {
		v.publish(line)
	}
	return nil
}
