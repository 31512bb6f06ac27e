//go:build unix

package dashboard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/dashboard"
	"github.com/hetsgd/hetsgd/internal/testdata"
)

// The page as a person sees it: headless Chromium loads it from a server
// holding two runs' logs (adaptive with merges, a fault and a resumption;
// GEM with its asynchronous records, half of it published after the page
// has loaded), and the charts must draw exactly the logs' points.
//
// Chromium is driven through its DevTools protocol over a pipe rather than
// with --dump-dom: --dump-dom writes the page at its load event, before
// the event stream has delivered anything, and --virtual-time-budget waits
// forever on the stream's open request. Over the protocol the test polls
// the live page until it shows what it must, so no sleep has to be long
// enough.
func TestBrowserDrawsTheLogs(t *testing.T) {
	adaptive := readLog(t, "testdata/adaptive.jsonl")
	gem := readLog(t, "testdata/gem.jsonl")
	const early = 10 // GEM's records published before the page loads

	s := dashboard.New()
	ra, rg := s.AddRun("adaptive.jsonl"), s.AddRun("gem.jsonl")
	for _, line := range adaptive {
		s.Publish(ra, line)
	}
	for _, line := range gem[:early] {
		s.Publish(rg, line)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the browser's cleanup: Close waits for its event stream to end

	b := startBrowser(t)
	b.open(srv.URL + "/")

	p1 := func(logs ...[][]byte) []string {
		var want []string
		for run, log := range logs {
			for _, r := range records(t, log, "eval") {
				want = append(want, point(run, r["train_seconds"], r["p1"]))
			}
		}
		return want
	}
	b.waitPoints(`[data-chart="p1-time"] circle`, p1(adaptive, gem[:early]))

	// Live: records published now reach the open page.
	for _, line := range gem[early:] {
		s.Publish(rg, line)
	}
	b.waitPoints(`[data-chart="p1-time"] circle`, p1(adaptive, gem))

	var epochs, rates, batches, pi []string
	for run, log := range [][][]byte{adaptive, gem} {
		mark := [2]float64{} // samples, train_seconds: the start, or where a resumed run took up
		for _, line := range log {
			var r map[string]any
			json.Unmarshal(line, &r)
			switch r["event"] {
			case "eval":
				epochs = append(epochs, point(run, r["epoch"], r["p1"]))
				n, t := r["samples"].(float64), r["train_seconds"].(float64)
				rates = append(rates, point(run, t, (n-mark[0])/(t-mark[1])))
				mark = [2]float64{n, t}
			case "resume":
				mark = [2]float64{r["samples"].(float64), r["train_seconds"].(float64)}
			case "async":
				pi = append(pi, point(run, r["time"], r["median_pi"]))
			}
		}
	}
	for _, m := range records(t, adaptive, "merge") {
		for d, v := range m["batch_sizes"].([]any) {
			batches = append(batches, fmt.Sprintf("%d %s", d, point(0, m["time"], v)))
		}
	}
	b.waitPoints(`[data-chart="p1-epoch"] circle`, epochs)
	b.waitPoints(`[data-chart="throughput"] circle`, rates)
	b.waitPoints(`[data-chart="median-pi"] circle`, pi)
	b.waitPoints(`[data-chart="batch-0"] circle`, batches)

	// Charts only for data that exist: GEM merges nothing, adaptive has no
	// asynchronous records.
	var charts []string
	b.eval(`Array.from(document.querySelectorAll('figure[data-chart]'), f => f.dataset.chart)`, &charts)
	want := []string{"p1-time", "p1-epoch", "loss-time", "loss-epoch", "throughput", "batch-0", "lr-0", "updates-0", "weights-0", "median-pi", "staleness"}
	if !slices.Equal(charts, want) {
		t.Errorf("charts %q, want %q", charts, want)
	}

	var perturbed []string
	for _, m := range records(t, adaptive, "merge") {
		if m["perturbed"] == true {
			perturbed = append(perturbed, fmt.Sprint(m["time"]))
		}
	}
	b.waitPoints(`[data-chart="weights-0"] .mark.perturbed`, xsOnly(perturbed))
	fault := records(t, adaptive, "fault")[0]
	resume := records(t, adaptive, "resume")[0]
	b.waitPoints(`[data-chart="p1-time"] line.vline`, []string{point(0, fault["time"], nil), point(0, resume["train_seconds"], nil)})

	var table [][]string
	b.eval(`Array.from(document.querySelectorAll('#run-table tr[data-run]'), tr => Array.from(tr.cells, c => c.textContent))`, &table)
	for run, log := range [][][]byte{adaptive, gem} {
		done := records(t, log, "done")[0]
		if len(table) != 2 || table[run][3] != "done" || table[run][4] != strconv.FormatFloat(done["best_p1"].(float64), 'f', 4, 64) {
			t.Errorf("runs table %q: run %d should be done with best P@1 %v", table, run, done["best_p1"])
		}
	}
	var events []string
	b.eval(`Array.from(document.querySelectorAll('#event-table tr[data-event]'), tr => tr.dataset.run + ' ' + tr.dataset.event)`, &events)
	if !slices.Equal(events, []string{"0 fault", "0 resumed", "0 restarted"}) {
		t.Errorf("events table %q", events)
	}
	// Two runs' settings: those that differ, by key path, whatever the
	// config record nests (GEM's log predates the settings object).
	var keys []string
	b.eval(`Array.from(document.querySelectorAll('#settings tr[data-key]'), tr => tr.dataset.key)`, &keys)
	if !slices.Contains(keys, "settings.adaptive.gamma") || !slices.Contains(keys, "strategy") || slices.Contains(keys, "train_points") {
		t.Errorf("settings rows %q: want those that differ only", keys)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.requests {
		if !strings.HasPrefix(u, srv.URL+"/") {
			t.Errorf("the page requested %s", u)
		}
	}
	if len(b.problems) > 0 {
		t.Errorf("the page reported:\n%s", strings.Join(b.problems, "\n"))
	}
}

// readLog returns a log's lines.
func readLog(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

// records returns a log's records of one kind.
func records(t *testing.T, log [][]byte, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range log {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r["event"] == kind {
			out = append(out, r)
		}
	}
	return out
}

// point names a drawn point: the run and its coordinates, as numbers (the
// page writes them as JavaScript does, the log as Go does).
func point(run int, x, y any) string {
	if y == nil {
		return fmt.Sprintf("%d %v", run, x)
	}
	return fmt.Sprintf("%d %v %v", run, x, y)
}

func xsOnly(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "0 " + x
	}
	return out
}

// browser is a headless Chromium, driven through the DevTools protocol over
// a pipe (--remote-debugging-pipe: JSON messages ended by a NUL byte).
type browser struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     *os.File
	dead   chan struct{} // closed when the browser's pipe closes
	stderr bytes.Buffer
	pageID string // the attached page's protocol session

	mu       sync.Mutex
	next     int
	replies  map[int]chan message
	requests []string // the URLs the page requested
	problems []string // exceptions and console errors
}

type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if path, err = exec.LookPath("chromium-browser"); err != nil {
			t.Skip("chromium is not installed (Debian: apt-get install chromium); the dashboard's browser test needs it")
		}
	}
	profile := t.TempDir()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, in: cmdW, dead: make(chan struct{}), replies: map[int]chan message{}}
	b.cmd = exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
		"--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
		"--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, outW} // its fds 3 (commands) and 4 (replies)
	b.cmd.Stderr = &b.stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helper processes go with it
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	cmdR.Close()
	outW.Close()
	go b.read(outR)
	t.Cleanup(b.close)
	return b
}

func (b *browser) read(r *os.File) {
	defer close(b.dead)
	defer r.Close()
	rd := bufio.NewReader(r)
	for {
		raw, err := rd.ReadBytes(0)
		if err != nil {
			return
		}
		var m message
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if ch, ok := b.replies[m.ID]; ok && m.ID != 0 {
			delete(b.replies, m.ID)
			ch <- m
		} else {
			b.noteEvent(m)
		}
		b.mu.Unlock()
	}
}

// noteEvent keeps what the test checks at the end: the page's requests,
// and anything it reported as wrong.
func (b *browser) noteEvent(m message) {
	var p struct {
		Request          struct{ URL string }
		Type             string
		Args             []struct{ Value any }
		ExceptionDetails struct {
			Text      string
			Exception struct{ Description string }
		}
		Entry struct{ Level, Text, URL string }
	}
	json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "Network.requestWillBeSent":
		b.requests = append(b.requests, p.Request.URL)
	case "Runtime.exceptionThrown":
		b.problems = append(b.problems, "exception: "+p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description)
	case "Runtime.consoleAPICalled":
		if p.Type == "error" || p.Type == "assert" || p.Type == "warning" {
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %v", p.Type, p.Args))
		}
	case "Log.entryAdded":
		if p.Entry.Level == "error" || p.Entry.Level == "warning" {
			b.problems = append(b.problems, fmt.Sprintf("%s: %s (%s)", p.Entry.Level, p.Entry.Text, p.Entry.URL))
		}
	}
}

// call sends one command (to the page once attached) and decodes its
// result into result.
func (b *browser) call(method string, params, result any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan message, 1)
	b.replies[id] = ch
	b.mu.Unlock()
	m := map[string]any{"id": id, "method": method, "params": params}
	if b.pageID != "" && !strings.HasPrefix(method, "Target.") && !strings.HasPrefix(method, "Browser.") {
		m["sessionId"] = b.pageID
	}
	raw, _ := json.Marshal(m)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-b.dead:
		return fmt.Errorf("%s: chromium exited", method)
	case <-time.After(testdata.Hang):
		return fmt.Errorf("%s: no reply after %v", method, testdata.Hang)
	}
}

func (b *browser) must(method string, params, result any) {
	b.t.Helper()
	if err := b.call(method, params, result); err != nil {
		b.t.Fatal(err)
	}
}

// open loads url in a new page 1280 pixels wide, watching its requests and
// errors.
func (b *browser) open(url string) {
	b.t.Helper()
	var target struct{ TargetID string }
	b.must("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.must("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.pageID = attached.SessionID
	for _, domain := range []string{"Network", "Runtime", "Log"} {
		b.must(domain+".enable", map[string]any{}, nil)
	}
	b.must("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.must("Page.navigate", map[string]any{"url": url}, nil)
}

// eval evaluates a JavaScript expression in the page; its value, as JSON,
// goes into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	b.must("Runtime.evaluate", map[string]any{"expression": "JSON.stringify(" + expr + ")", "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expr, r.ExceptionDetails.Text)
	}
	var s string
	if err := json.Unmarshal(r.Result.Value, &s); err != nil {
		b.t.Fatalf("evaluating %s: %s", expr, r.Result.Value)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
}

// waitPoints waits until the elements selector matches carry exactly the
// points want (in any order): data-run, data-x and data-y (data-device,
// when they have one, first).
func (b *browser) waitPoints(selector string, want []string) {
	b.t.Helper()
	want = canonical(b.t, want)
	expr := `Array.from(document.querySelectorAll('` + selector + `'), e => [e.dataset.device, e.dataset.run, e.dataset.x, e.dataset.y].filter(v => v !== undefined).join(' '))`
	deadline := time.Now().Add(testdata.Hang)
	var got []string
	for {
		b.eval(expr, &got)
		got = canonical(b.t, got)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: the page draws %d points, the logs have %d:\npage: %q\nlogs: %q", selector, len(got), len(want), got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// canonical parses each point's numbers, so that "1e-7" and "1e-07" are
// one, and sorts the points.
func canonical(t *testing.T, points []string) []string {
	out := make([]string, len(points))
	for i, p := range points {
		f := strings.Fields(p)
		for j, s := range f {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("point %q: %v", p, err)
			}
			f[j] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		out[i] = strings.Join(f, " ")
	}
	slices.Sort(out)
	return out
}

// close ends the browser and every process it started.
func (b *browser) close() {
	b.call("Browser.close", map[string]any{}, nil)
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	// Helpers still alive would hold the profile folder TempDir removes.
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		b.t.Logf("ending chromium's processes: %v", err)
	}
	b.in.Close()
	if b.t.Failed() {
		b.t.Logf("chromium's stderr:\n%s", b.stderr.String())
	}
}
