// Command serveload measures a model server's latency and throughput: a
// bounded client that sends a fixed number of /predict requests, each of a
// test set's points, from a fixed number of concurrent connections, and
// prints the latencies' percentiles and the rates as one JSON line.
//
//	go run ./bench/serveload --url http://127.0.0.1:8000/predict --data DIR --concurrency 1 --requests 500
//
// The points are the set's rows in order, request after request (a
// folder's test split, or a file), so that two runs send the same bodies.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/tfidf"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8000/predict", "the server's /predict")
	path := flag.String("data", "bundled:bibtex", "the points: a dataset folder (its test split), a file or bundled:NAME")
	text := flag.String("text", "", "send texts instead, to a model with a vectorizer: the documents of a labelled text file (labels<TAB>text lines), in order")
	conc := flag.Int("concurrency", 1, "requests in flight at once")
	n := flag.Int("requests", 200, "requests to time")
	per := flag.Int("points", 1, "points a request")
	warm := flag.Int("warmup", 10, "requests sent first, not timed")
	k := flag.Int("top", 5, "labels a point")
	flag.Parse()
	if err := run(*url, *path, *text, *conc, *n, *per, *warm, *k); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

func run(url, path, text string, conc, n, per, warm, k int) error {
	if conc < 1 || n < 1 || per < 1 || warm < 0 || k < 1 {
		return fmt.Errorf("--concurrency, --requests, --points and --top at least 1, --warmup at least 0")
	}
	// Every body is made before the clock starts.
	var bodies [][]byte
	var err error
	if text != "" {
		bodies, err = textBodies(text, warm+n, per, k)
	} else {
		bodies, err = pointBodies(path, warm+n, per, k)
	}
	if err != nil {
		return err
	}
	return load(url, bodies, conc, n, per, warm)
}

// pointBodies makes count /predict bodies of per points each, the rows of
// the set at path in order.
func pointBodies(path string, count, per, k int) ([][]byte, error) {
	sets, err := data.Loader{}.LoadAny(path)
	if err != nil {
		return nil, err
	}
	set := sets[len(sets)-1]
	bodies := make([][]byte, count)
	type instance struct {
		Indices []int32   `json:"indices"`
		Values  []float32 `json:"values,omitempty"`
	}
	for r := range bodies {
		req := struct {
			Instances []instance `json:"instances"`
			TopK      int        `json:"top_k"`
		}{TopK: k}
		for p := range per {
			f, v := set.X.Row((r*per + p) % set.Len())
			req.Instances = append(req.Instances, instance{f, v})
		}
		if bodies[r], err = json.Marshal(req); err != nil {
			return nil, err
		}
	}
	return bodies, nil
}

// textBodies makes count /predict bodies of per texts each, the documents
// of the labelled text at path in order.
func textBodies(path string, count, per, k int) ([][]byte, error) {
	docs, err := tfidf.ReadPath(path)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s holds no documents", path)
	}
	bodies := make([][]byte, count)
	for r := range bodies {
		req := struct {
			Texts []string `json:"texts"`
			TopK  int      `json:"top_k"`
		}{TopK: k}
		for p := range per {
			req.Texts = append(req.Texts, docs[(r*per+p)%len(docs)].Text)
		}
		if bodies[r], err = json.Marshal(req); err != nil {
			return nil, err
		}
	}
	return bodies, nil
}

// load sends bodies from conc clients, the first warm untimed, and prints
// the latencies' percentiles and the rates.
func load(url string, bodies [][]byte, conc, n, per, warm int) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}, Timeout: time.Minute}
	send := func(b []byte) (time.Duration, error) {
		start := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%d: %s", resp.StatusCode, body)
		}
		return time.Since(start), nil
	}
	for _, b := range bodies[:warm] {
		if _, err := send(b); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, n)
	next := make(chan int, n)
	for r := range n {
		next <- r
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				d, err := send(bodies[warm+r])
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				lat[r] = d
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[min(n-1, int(q*float64(n)))]) / 1e6 }
	out := map[string]any{
		"concurrency": conc, "requests": n, "points_per_request": per,
		"p50_ms": ms(0.50), "p90_ms": ms(0.90), "p99_ms": ms(0.99), "max_ms": float64(lat[n-1]) / 1e6,
		"requests_per_s": float64(n) / wall.Seconds(), "points_per_s": float64(n*per) / wall.Seconds(),
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
