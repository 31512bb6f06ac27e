package dashboard

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Timing of the event stream; variables so that tests can shorten them.
var (
	// writeTimeout bounds one write to a client: a client that reads
	// nothing for this long is disconnected (its browser reconnects and
	// resumes), so that it holds no handler forever.
	writeTimeout = 30 * time.Second
	// keepAlive is how often an idle stream sends a comment, so that a
	// closed connection is noticed and proxies do not time the stream out.
	keepAlive = 15 * time.Second
)

// maxBatch bounds the records one write sends, so that a late client's
// history goes out in pieces with the write deadline renewed between them.
const maxBatch = 512

// entry is one event of the stream, in the order the server saw them.
type entry struct {
	seq  uint64 // position in the stream: 1, 2, ...; never reused
	run  int
	kind entryKind
	n    int    // record: its number in the run
	data []byte // record: the line; run: the name
}

type entryKind uint8

const (
	recordEntry entryKind = iota // a line of a run log
	runEntry                     // a run was added
	resetEntry                   // a run's history starts over
)

type runState struct {
	name string
	// seqs holds the stream position of each record the run ever had
	// (index: the record's number), those dropped by Reset included, so
	// that every id a client may send back is found.
	seqs []uint64
}

// Server keeps the records of one or more runs and serves them (Handler).
// Its methods are safe for concurrent use.
type Server struct {
	instance string

	mu   sync.Mutex
	runs []runState
	// log is the stream a new client receives: every entry not superseded
	// by a later reset of its run, in seq order.
	log  []entry
	seq  uint64
	subs map[chan struct{}]struct{}
}

// New returns a server with no runs.
func New() *Server {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return &Server{instance: hex.EncodeToString(b[:]), subs: map[chan struct{}]struct{}{}}
}

// AddRun adds a run named name (shown on the page; a log file's name, say)
// and returns its index, the run argument of the other methods.
func (s *Server) AddRun(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, runState{name: name})
	run := len(s.runs) - 1
	s.appendLocked(entry{run: run, kind: runEntry, data: []byte(name)})
	return run
}

// Runs returns the runs' names, indexed by run.
func (s *Server) Runs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.runs))
	for i, r := range s.runs {
		names[i] = r.name
	}
	return names
}

// Publish appends one record of run's log, line (a JSON object; a trailing
// newline is dropped), to the run's history and wakes the clients. It
// copies line and returns at once: it never waits for a client. An empty
// line is ignored. A run AddRun did not return panics.
func (s *Server) Publish(run int, line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return
	}
	data := bytes.Clone(line)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runLocked(run)
	s.appendLocked(entry{run: run, kind: recordEntry, n: len(r.seqs), data: data})
	r.seqs = append(r.seqs, s.seq)
}

// Reset drops run's history: its log was cut back or replaced, and the
// records published from now on are its history. Clients are told to drop
// what they hold of the run. Records keep being numbered on from the
// dropped ones, so that an id names one record for the server's lifetime.
func (s *Server) Reset(run int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLocked(run)
	kept := s.log[:0:0]
	for _, e := range s.log {
		if e.run != run || e.kind == runEntry {
			kept = append(kept, e)
		}
	}
	// A new slice: handlers may be sending from the old one.
	s.log = kept
	s.appendLocked(entry{run: run, kind: resetEntry})
}

func (s *Server) runLocked(run int) *runState {
	if run < 0 || run >= len(s.runs) {
		panic("dashboard: no such run (use an index AddRun returned)")
	}
	return &s.runs[run]
}

// appendLocked adds e to the stream and wakes every client without
// waiting: a client already woken and not yet done sending will see e too.
func (s *Server) appendLocked(e entry) {
	s.seq++
	e.seq = s.seq
	s.log = append(s.log, e)
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// after returns up to maxBatch entries of the stream after position seq.
func (s *Server) after(seq uint64) []entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].seq > seq })
	j := min(len(s.log), i+maxBatch)
	return append([]entry(nil), s.log[i:j]...)
}

// resumeAt returns the stream position of the record a Last-Event-ID
// names ("RUN:N"), or ok false when it names none of this server's.
func (s *Server) resumeAt(id string) (seq uint64, ok bool) {
	r, n, found := strings.Cut(id, ":")
	run, err1 := strconv.Atoi(r)
	num, err2 := strconv.Atoi(n)
	if !found || err1 != nil || err2 != nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if run < 0 || run >= len(s.runs) || num < 0 || num >= len(s.runs[run].seqs) {
		return 0, false
	}
	return s.runs[run].seqs[num], true
}

func (s *Server) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch
}

func (s *Server) unsubscribe(ch chan struct{}) {
	s.mu.Lock()
	delete(s.subs, ch)
	s.mu.Unlock()
}

// Handler returns the handler of the page and its endpoints (see the
// package documentation). It serves every host name; Serve adds a check of
// the Host header when it listens on loopback.
func (s *Server) Handler() http.Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("dashboard: embedded assets missing")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /runs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(s.Runs())
	})
	files := http.FileServerFS(static)
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The assets change with the binary: a page reloaded after an
		// upgrade must not mix old and new files.
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Everything the page needs comes from this server: a request
		// anywhere else is a bug, and the browser refuses it.
		h.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		mux.ServeHTTP(w, r)
	})
}

// serveEvents streams the history after the client's Last-Event-ID (all
// of it for a new client), then each entry as it comes, until the client
// goes, the request's context ends (Serve cancels it at shutdown) or a
// write times out.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	// Subscribe before reading the history, so that nothing published in
	// between is missed.
	wake := s.subscribe()
	defer s.unsubscribe(wake)

	var cursor uint64
	resetAll := false
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		var ok bool
		if cursor, ok = s.resumeAt(id); !ok {
			// Not one of ours (the server restarted with other runs): the
			// client's records cannot be trusted, so it drops them all.
			resetAll = true
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the stream
	w.WriteHeader(http.StatusOK)

	bw := bufio.NewWriterSize(w, 32<<10)
	send := func() bool {
		rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // not every ResponseWriter has deadlines: best effort
		return bw.Flush() == nil && rc.Flush() == nil
	}
	runs := s.Runs()
	hello, _ := json.Marshal(struct {
		Instance string   `json:"instance"`
		Runs     []string `json:"runs"`
	}{s.instance, runs})
	fmt.Fprintf(bw, "retry: 1000\nevent: hello\ndata: %s\n\n", hello)
	if resetAll {
		for run := range runs {
			fmt.Fprintf(bw, "event: reset\ndata: {\"run\":%d}\n\n", run)
		}
	}
	if !send() {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		if batch := s.after(cursor); len(batch) > 0 {
			for _, e := range batch {
				writeEntry(bw, e)
			}
			cursor = batch[len(batch)-1].seq
			if !send() {
				return
			}
			continue
		}
		select {
		case <-wake:
		case <-tick.C:
			bw.WriteString(": keep-alive\n\n")
			if !send() {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func writeEntry(bw *bufio.Writer, e entry) {
	switch e.kind {
	case recordEntry:
		fmt.Fprintf(bw, "id: %d:%d\n", e.run, e.n)
		// A record is one line; should one hold a line break, each line
		// goes in a data field of its own, which the client joins with
		// the same line break: the record arrives unchanged.
		for line := range bytes.Lines(e.data) {
			bw.WriteString("data: ")
			bw.Write(bytes.TrimRight(line, "\n"))
			bw.WriteByte('\n')
		}
		bw.WriteByte('\n')
	case runEntry:
		name, _ := json.Marshal(string(e.data))
		fmt.Fprintf(bw, "event: run\ndata: {\"run\":%d,\"name\":%s}\n\n", e.run, name)
	case resetEntry:
		fmt.Fprintf(bw, "event: reset\ndata: {\"run\":%d}\n\n", e.run)
	}
}
