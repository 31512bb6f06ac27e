package dashboard

import (
	"bytes"
	"context"
	"io"
)

// Live is a dashboard of one run, served in the background while the run
// goes on in the caller (hetsgd train --dashboard): the run's log passes it
// every record as it writes it, runlog.Log.Also(live.Publish).
type Live struct {
	URL  string // the page, with the port listened on
	s    *Server
	run  int
	stop func()
}

// StartLive serves a dashboard of one run, named name, at addr (Serve's;
// port 0 picks a free port) until Stop. It returns once it listens, or
// with Serve's error when addr cannot be listened on: a run then fails
// before it starts rather than train unseen.
func StartLive(addr, name string) (*Live, error) {
	s := New()
	l := &Live{s: s, run: s.AddRun(name)}
	// The server's own context, not the run's: after an interrupt the
	// page goes on showing the run until it has stopped and said so.
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, addr, s, func(url string) { ready <- url }) }()
	select {
	case l.URL = <-ready:
	case err := <-done:
		cancel()
		return nil, err
	}
	l.stop = func() {
		cancel()
		<-done
	}
	return l, nil
}

// Publish shows one record of the run's log, a line as runlog.Log.Also
// hands it. A nil Live publishes nothing, so that a run without a
// dashboard hands its log l.Publish all the same.
func (l *Live) Publish(line []byte) {
	if l != nil {
		l.s.Publish(l.run, line)
	}
}

// PublishLog shows the records in the first n bytes r reads: those of a
// continued log before the point where the run continues it, so that the
// page shows the whole run. An r that ends before n bytes returns
// io.ReadFull's error, as is, for the caller to say which log it read.
func (l *Live) PublishLog(r io.Reader, n int64) error {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	for line := range bytes.Lines(b) {
		l.Publish(line)
	}
	return nil
}

// Stop shuts the server down, ending the page's event streams, and waits
// for it.
func (l *Live) Stop() { l.stop() }
