package dashboard

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/runlog"
)

// Load publishes the records the run log at path holds now as run's, once,
// without following the file: what a snapshot draws. It returns the error
// of a file it cannot read, or that is no run log (Follow's checks); warn,
// if not nil, is told of lines skipped.
func (s *Server) Load(run int, path string, warn func(error)) error {
	if warn == nil {
		warn = func(error) {}
	}
	f := &follower{s: s, run: run, path: path, warn: warn}
	defer f.close()
	return f.poll()
}

// WriteSnapshot writes to w the page of the run logs at paths as they
// stand now (named by runlog.FileNames): one self-contained HTML file, its
// style, script and records inside it, that draws the logs' final state
// without a server (no event stream) as soon as it is opened, so that a
// headless browser's screenshot shows the charts. taken is when the logs
// were read, shown on the page. warn is Load's.
func WriteSnapshot(w io.Writer, paths []string, taken time.Time, warn func(error)) error {
	s := New()
	for i, name := range runlog.FileNames(paths) {
		if err := s.Load(s.AddRun(name), paths[i], warn); err != nil {
			return err
		}
	}
	type snapshot struct {
		Taken   string            `json:"taken"`
		Runs    []string          `json:"runs"`
		Records []json.RawMessage `json:"records"` // [run, record]
	}
	snap := snapshot{Taken: taken.UTC().Format("2006-01-02 15:04:05 UTC"), Runs: s.Runs(), Records: []json.RawMessage{}}
	s.mu.Lock()
	for _, e := range s.log {
		if e.kind == recordEntry && json.Valid(e.data) {
			snap.Records = append(snap.Records, json.RawMessage(fmt.Sprintf("[%d,%s]", e.run, e.data)))
		}
	}
	s.mu.Unlock()
	// json.Marshal escapes <, > and &: no record can end the script
	// element it goes in.
	data, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	page, err := snapshotPage(data)
	if err != nil {
		return err
	}
	_, err = w.Write(page)
	return err
}

// snapshotPage is the page with its assets inlined and data, the
// snapshot's JSON, in a script element the page's script reads.
func snapshotPage(data []byte) ([]byte, error) {
	read := func(name string) (string, error) {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return "", fmt.Errorf("dashboard: embedded assets missing: %w", err)
		}
		return string(b), nil
	}
	index, err := read("index.html")
	if err != nil {
		return nil, err
	}
	css, err := read("style.css")
	if err != nil {
		return nil, err
	}
	js, err := read("app.js")
	if err != nil {
		return nil, err
	}
	icon, err := read("favicon.svg")
	if err != nil {
		return nil, err
	}
	if strings.Contains(strings.ToLower(js+css), "</script") || strings.Contains(strings.ToLower(css), "</style") {
		return nil, fmt.Errorf("dashboard: an asset would end the element it is inlined in")
	}
	for _, r := range []struct{ old, new string }{
		{`href="favicon.svg"`, `href="data:image/svg+xml;base64,` + base64.StdEncoding.EncodeToString([]byte(icon)) + `"`},
		{`<link rel="stylesheet" href="style.css">`, "<style>\n" + css + "</style>"},
		// Inline, the script runs where it stands: after the body it draws
		// into, as the deferred file does.
		{`<script src="app.js" defer></script>` + "\n", ""},
		{"</body>", `<script type="application/json" id="snapshot">` + string(data) + "</script>\n<script>\n" + js + "</script>\n</body>"},
	} {
		if !strings.Contains(index, r.old) {
			return nil, fmt.Errorf("dashboard: the page has no %q to inline the snapshot at", r.old)
		}
		index = strings.Replace(index, r.old, r.new, 1)
	}
	return []byte(index), nil
}
