package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hetsgd/hetsgd/internal/testdata"
)

// event is one server-sent event as a client sees it.
type event struct {
	id, name, data string
}

func (e event) String() string { return fmt.Sprintf("{%s %s %s}", e.id, e.name, e.data) }

// stream reads server-sent events from a response body.
type stream struct {
	t      *testing.T
	events chan event
	done   chan struct{} // closed when the body ends
}

// connect opens /events on url with Last-Event-ID lastID (none if ""),
// and reads it until ctx is done.
func connect(t *testing.T, ctx context.Context, url, lastID string) *stream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("/events: %s, %s", resp.Status, ct)
	}
	st := &stream{t: t, events: make(chan event, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var e event
		var data []string
		for sc.Scan() {
			line := sc.Text()
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch {
			case line == "":
				if data != nil {
					e.data = strings.Join(data, "\n")
					st.events <- e
				}
				e, data = event{}, nil
			case field == "id":
				e.id = value
			case field == "event":
				e.name = value
			case field == "data":
				data = append(data, value)
			}
		}
	}()
	return st
}

// next returns the next event. A stream that ended fails the test at once
// (the events it sent before are returned first); one that stays silent
// fails it after testdata.Hang.
func (st *stream) next() event {
	st.t.Helper()
	select {
	case e := <-st.events:
		return e
	case <-st.done:
		select {
		case e := <-st.events:
			return e
		default:
			st.t.Fatal("the event stream ended")
		}
	case <-time.After(testdata.Hang):
		st.t.Fatalf("no event after %v", testdata.Hang)
	}
	return event{}
}

// records returns the next n record events (skipping named ones).
func (st *stream) records(n int) []event {
	st.t.Helper()
	var out []event
	for len(out) < n {
		if e := st.next(); e.name == "" {
			out = append(out, e)
		}
	}
	return out
}

func newTestServer(t *testing.T, s *Server) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func rec(i int) string { return fmt.Sprintf(`{"event":"eval","epoch":%d,"p1":0.%d}`, i, i) }

func wantRecords(t *testing.T, got []event, want ...string) {
	t.Helper()
	if len(got) != len(want)/2 {
		t.Fatalf("got %d records, want %d", len(got), len(want)/2)
	}
	for i, e := range got {
		if e.id != want[2*i] || e.data != want[2*i+1] {
			t.Fatalf("record %d: got id %q data %q, want id %q data %q", i, e.id, e.data, want[2*i], want[2*i+1])
		}
	}
}

// A client that connects late receives the whole history first, each
// record's data the log's line unchanged (less its line break), its id the
// run and the record's number; then the records published later.
func TestLateClientGetsHistoryThenLive(t *testing.T) {
	s := New()
	a, b := s.AddRun("a.jsonl"), s.AddRun("b.jsonl")
	s.Publish(a, []byte(rec(0)+"\n"))
	s.Publish(b, []byte(rec(1)))
	s.Publish(a, []byte(rec(2)+"\r\n"))
	url := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := connect(t, ctx, url, "")
	hello := st.next()
	if hello.name != "hello" || !strings.Contains(hello.data, `"runs":["a.jsonl","b.jsonl"]`) {
		t.Fatalf("first event %v, want hello with the runs", hello)
	}
	wantRecords(t, st.records(3), "0:0", rec(0), "1:0", rec(1), "0:1", rec(2))
	s.Publish(b, []byte(rec(3)))
	wantRecords(t, st.records(1), "1:1", rec(3))
}

// A client that reconnects with Last-Event-ID receives what followed that
// record, across runs, and nothing twice; an id the server never gave
// makes it drop every run and receive the whole history.
func TestLastEventIDResumes(t *testing.T) {
	s := New()
	a, b := s.AddRun("a"), s.AddRun("b")
	for i := range 6 {
		s.Publish(i%2, []byte(rec(i)))
	}
	url := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	st := connect(t, ctx, url, "1:0") // the second record published
	wantRecords(t, st.records(4), "0:1", rec(2), "1:1", rec(3), "0:2", rec(4), "1:2", rec(5))
	s.Publish(a, []byte(rec(6)))
	wantRecords(t, st.records(1), "0:3", rec(6))

	st = connect(t, ctx, url, "0:3") // up to date
	s.Publish(b, []byte(rec(7)))
	wantRecords(t, st.records(1), "1:3", rec(7))

	st = connect(t, ctx, url, "7:1")
	var resets []string
	var got []event
	for len(got) < 8 {
		switch e := st.next(); e.name {
		case "reset":
			if len(got) > 0 {
				t.Fatalf("reset %s after records", e.data)
			}
			resets = append(resets, e.data)
		case "":
			got = append(got, e)
		}
	}
	if strings.Join(resets, " ") != `{"run":0} {"run":1}` || got[0].id != "0:0" || got[7].id != "1:3" {
		t.Fatalf("unknown id: resets %v, records %v", resets, got)
	}
}

// After Reset a run's earlier records are gone for new clients, clients
// are told to drop them, and numbering goes on, so that an old id still
// resumes correctly.
func TestReset(t *testing.T) {
	s := New()
	a, b := s.AddRun("a"), s.AddRun("b")
	s.Publish(a, []byte(rec(0)))
	s.Publish(b, []byte(rec(1)))
	s.Publish(a, []byte(rec(2)))
	url := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := connect(t, ctx, url, "")
	live.records(3)

	s.Reset(a)
	s.Publish(a, []byte(rec(3)))
	if e := live.next(); e.name != "reset" || e.data != `{"run":0}` {
		t.Fatalf("live client: %v, want a reset of run 0", e)
	}
	wantRecords(t, live.records(1), "0:2", rec(3))

	late := connect(t, ctx, url, "")
	var got []string
	for len(got) < 3 {
		e := late.next()
		if e.name == "reset" || e.name == "" {
			got = append(got, e.name+"|"+e.id+"|"+e.data)
		}
	}
	want := []string{"|1:0|" + rec(1), `reset||{"run":0}`, "|0:2|" + rec(3)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("late client:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	resumed := connect(t, ctx, url, "0:0") // a record the reset dropped
	if e := resumed.next(); e.name != "hello" {
		t.Fatalf("%v", e)
	}
	got = got[:0]
	for len(got) < 3 {
		e := resumed.next()
		got = append(got, e.name+"|"+e.id+"|"+e.data)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resumed client:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A record holding a line break still arrives whole.
func TestRecordWithLineBreak(t *testing.T) {
	s := New()
	s.Publish(s.AddRun("a"), []byte("{\"event\":\"note\",\n\"text\":\"x\"}\n"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := connect(t, ctx, newTestServer(t, s), "")
	wantRecords(t, st.records(1), "0:0", "{\"event\":\"note\",\n\"text\":\"x\"}")
}

// Publish copies the line: the caller may reuse its buffer.
func TestPublishCopies(t *testing.T) {
	s := New()
	buf := []byte(rec(1))
	s.Publish(s.AddRun("a"), buf)
	copy(buf, "XXXXXXXX")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wantRecords(t, connect(t, ctx, newTestServer(t, s), "").records(1), "0:0", rec(1))
}

// A client that never reads holds nothing up: with it connected, and a
// write timeout far longer than the test may wait, publishing 32 MB
// returns (a Publish that waited for a client would wait out that timeout)
// and a reading client gets every record.
func TestPublisherNotBlockedBySlowClient(t *testing.T) {
	setWriteTimeout(t, time.Hour)
	s := New()
	run := s.AddRun("a")
	url := newTestServer(t, s)

	stuck := connectStuck(t, url)
	defer stuck.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reader := connect(t, ctx, url, "")
	testdata.Until(t, "both clients subscribed", func() bool { return subscribers(s) == 2 })

	line := []byte(`{"event":"merge","pad":"` + strings.Repeat("x", 4000) + `"}`)
	const n = 8000 // 32 MB: far more than the socket buffers hold
	published := make(chan struct{})
	go func() {
		defer close(published)
		for range n {
			s.Publish(run, line)
		}
	}()
	testdata.Recv(t, published, "publishing with a client that does not read")
	got := 0
	for got < n {
		if e := reader.next(); e.name == "" {
			if e.data != string(line) {
				t.Fatalf("record %d corrupted", got)
			}
			got++
		}
	}
}

// A client that reads nothing is dropped once a write to it has waited the
// write timeout, so that it holds no handler for ever. (No other client is
// connected: the short timeout would drop a reading client that a busy
// machine holds up.)
func TestStuckClientDropped(t *testing.T) {
	setWriteTimeout(t, 300*time.Millisecond)
	s := New()
	run := s.AddRun("a")
	stuck := connectStuck(t, newTestServer(t, s))
	defer stuck.Close()
	testdata.Until(t, "the client subscribed", func() bool { return subscribers(s) == 1 })
	line := []byte(`{"event":"merge","pad":"` + strings.Repeat("x", 4000) + `"}`)
	for range 8000 { // 32 MB: far more than the socket buffers hold
		s.Publish(run, line)
	}
	testdata.Until(t, "the stuck client dropped", func() bool { return subscribers(s) == 0 })
}

// setWriteTimeout sets writeTimeout for the test. Call it before the test's
// server starts: the old value is restored after the server has closed,
// which waits for its handlers (cleanups run last registered first); a
// deferred restore raced with a handler still reading it.
func setWriteTimeout(t *testing.T, d time.Duration) {
	old := writeTimeout
	t.Cleanup(func() { writeTimeout = old })
	writeTimeout = d
}

// connectStuck opens /events on url as a client that reads nothing.
func connectStuck(t *testing.T, url string) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/"), "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /events HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	return c
}

func subscribers(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// Cancelling Serve's context ends it, event streams included, even with a
// client that stopped reading: with a write timeout far longer than the
// test may wait, a shutdown that waited for that client's write would hang.
func TestServeShutsDownOnCancel(t *testing.T) {
	setWriteTimeout(t, time.Hour)
	s := New()
	run := s.AddRun("a")
	for range 2000 {
		s.Publish(run, []byte(`{"event":"merge","pad":"`+strings.Repeat("y", 2000)+`"}`))
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, "127.0.0.1:0", s, func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-served:
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0/") {
		t.Fatalf("url %q, want the actual port", url)
	}
	base := strings.TrimSuffix(url, "/")
	stuck := connectStuck(t, base)
	defer stuck.Close()
	reader := connect(t, context.Background(), base, "")
	reader.records(10)
	testdata.Until(t, "both clients subscribed", func() bool { return subscribers(s) == 2 })

	cancel()
	if err := testdata.Recv(t, served, "Serve's return after its context was cancelled"); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	testdata.Recv(t, reader.done, "the end of a client's stream at shutdown")
	// Every handler has returned, the stuck client's too (and none reads
	// writeTimeout any more when the cleanup restores it).
	testdata.Until(t, "the handlers' end at shutdown", func() bool { return subscribers(s) == 0 })
}

// Serve reports a port it cannot listen on.
func TestServeListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Serve(context.Background(), ln.Addr().String(), New(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "dashboard: ") {
		t.Fatalf("Serve on a port in use: %v", err)
	}
}

// On loopback the server answers to localhost and IP addresses only: a
// page elsewhere cannot read the runs by rebinding a name to 127.0.0.1.
func TestServeLoopbackRefusesOtherNames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, "127.0.0.1:0", New(), func(u string) { urls <- u }) }()
	url := <-urls
	defer func() { cancel(); <-served }()
	port := url[strings.LastIndex(url, ":")+1 : len(url)-1]
	for host, want := range map[string]int{
		"127.0.0.1:" + port:        200,
		"localhost:" + port:        200,
		"[::1]:" + port:            200,
		"evil.example:" + port:     http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io:" + port: http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest("GET", url+"runs", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:0": true, "[::1]:80": true, "localhost:8080": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:80": false, "192.168.1.4:8080": false,
		"example.com:80": false, "127.0.0.1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// The page and its files are served with a policy that lets the browser
// load nothing from elsewhere, and none of them names another site.
func TestAssetsSelfContained(t *testing.T) {
	url := newTestServer(t, New())
	// The SVG namespace is a name, not a request.
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for path, ctype := range map[string]string{
		"/":            "text/html",
		"/app.js":      "text/javascript",
		"/style.css":   "text/css",
		"/favicon.svg": "image/svg+xml",
	} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
			t.Fatalf("%s: %s, %s", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		text := strings.ReplaceAll(string(body), "http://www.w3.org/2000/svg", "")
		if m := external.FindString(text); m != "" {
			t.Errorf("%s refers to %s", path, m)
		}
	}
	resp, err := http.Get(url + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("/runs with no runs: %s", b)
	}
}

// history returns the records the server holds for run.
func history(s *Server, run int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.log {
		if e.run == run && e.kind == recordEntry {
			out = append(out, string(e.data))
		}
	}
	return out
}

func TestPublishUnknownRunPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "dashboard: ") {
			t.Fatalf("recovered %v", r)
		}
	}()
	New().Publish(0, []byte("{}"))
}

func TestMain(m *testing.M) {
	// Keep-alives every 15 s would never show in these tests; make them
	// frequent so that a stream ends soon after its client has gone.
	keepAlive = 200 * time.Millisecond
	os.Exit(m.Run())
}
