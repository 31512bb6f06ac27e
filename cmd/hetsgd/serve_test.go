package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/trained"
)

// serve answers a checkpoint folder's model as predict writes it, serves
// the run's next checkpoint once written, and stops on SIGINT.
func TestServeFollowsTheRun(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	runCLIOut(t, "train", "--epochs", "1", "--hidden", "16", "--checkpoint", ck, "--progress", "off")
	_, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	feats, vals := test.X.Row(0)
	body, _ := json.Marshal(map[string]any{"instances": []any{map[string]any{"indices": feats, "values": vals}}, "top_k": 5})
	predicted := func() string { // point 0's labels as predict writes them
		out := filepath.Join(dir, "top5.tsv")
		os.Remove(out)
		runCLIOut(t, "predict", "--model", ck, "--data", "bundled:bibtex", "--top", "5", "--out", out)
		b, _ := os.ReadFile(out)
		line, _, _ := strings.Cut(string(b), "\n")
		var labels []string
		for _, f := range strings.Fields(line)[1:] {
			l, _, _ := strings.Cut(f, ":")
			labels = append(labels, l)
		}
		return strings.Join(labels, " ")
	}
	cmd, out, errb := startTool(t, "serve", "--model", ck, "--addr", "127.0.0.1:0", "--reload", "0.02")
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	urlRE := regexp.MustCompile(`and (http://\S+/)predict`)
	if !waitFor(t, cmd, exited, func() bool { return urlRE.MatchString(out.String()) }) {
		t.Fatalf("serve ended: %s %s", out, errb)
	}
	url := urlRE.FindStringSubmatch(out.String())[1] + "predict"
	served := func() string {
		r, err := http.Post(url, "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var got struct{ Predictions []struct{ Labels []int } }
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil || len(got.Predictions) != 1 {
			t.Fatalf("/predict: %d %v %+v", r.StatusCode, err, got)
		}
		var labels []string
		for _, l := range got.Predictions[0].Labels {
			labels = append(labels, strconv.Itoa(l))
		}
		return strings.Join(labels, " ")
	}
	if got, want := served(), predicted(); got != want {
		t.Errorf("served labels %s, predict's %s", got, want)
	}
	before := predicted()
	runCLIOut(t, "train", "--resume", ck, "--epochs", "4", "--progress", "off")
	after := predicted()
	last, err := trained.File(ck, trained.Last)
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(t, cmd, exited, func() bool { return strings.Contains(errb.String(), "serving "+last) }) {
		t.Fatalf("serve ended: %s", errb)
	}
	if got := served(); got != after || after == before {
		t.Errorf("after the run's next checkpoint: served %s, predict's %s (before %s)", got, after, before)
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("SIGINT: exit %d, %s", code, errb)
	}
}
