package dashboard_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/hetsgd/hetsgd/dashboard"
)

// A page that connects receives every record so far, each exactly as the
// run log holds it, with the run and the record's number as its id, then
// each record as it is published. (A training loop publishes its log's
// records as it writes them, through runlog.Log.Also; a real server runs
// with dashboard.Serve(ctx, dashboard.DefaultAddr, s, ready) until ctx is
// cancelled.)
func ExampleServer() {
	s := dashboard.New()
	run := s.AddRun("run.jsonl")
	s.Publish(run, []byte(`{"event":"config","strategy":"adaptive","devices":4}`+"\n"))
	s.Publish(run, []byte(`{"event":"eval","epoch":1,"train_seconds":0.5,"p1":0.42}`+"\n"))

	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the stream, which srv.Close waits for
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for records := 0; records < 2 && sc.Scan(); {
		if line := sc.Text(); strings.HasPrefix(line, "id: ") || strings.HasPrefix(line, `data: {"event"`) {
			fmt.Println(line)
			if strings.HasPrefix(line, "data: ") {
				records++
			}
		}
	}
	// Output:
	// id: 0:0
	// data: {"event":"config","strategy":"adaptive","devices":4}
	// id: 0:1
	// data: {"event":"eval","epoch":1,"train_seconds":0.5,"p1":0.42}
}

// A run shows itself live: the dashboard serves in the background from
// StartLive to Stop, and the run's log hands it each record as it writes
// it (log.Also(live.Publish) for a runlog.Log). Port 0 picks a free port;
// live.URL says which.
func ExampleStartLive() {
	live, err := dashboard.StartLive("127.0.0.1:0", "adaptive ×4")
	if err != nil {
		panic(err)
	}
	defer live.Stop()
	live.Publish([]byte(`{"event":"config","strategy":"adaptive","devices":4}` + "\n"))

	resp, err := http.Get(live.URL + "runs")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	io.Copy(os.Stdout, resp.Body)
	// Output:
	// ["adaptive ×4"]
}
