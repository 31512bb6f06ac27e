// Package strategytest replays scripted events against strategies and
// compares the actions with a recorded transcript, in the manner of etcd
// raft's data-driven interaction tests. A script is a text file of commands;
// after each command the transcript lists the actions it caused, indented
// and prefixed with "->". Run the tests with -rewrite to regenerate the
// transcripts from the current code, then review the diff.
//
// Commands:
//
//	new NAME devices=N batch=B lr=L [size=S] [option=value ...]
//	start                      the Start event
//	done D [D ...]             BatchDone for each listed device, in order
//	collective                 CollectiveDone
//	leave D [D ...]            Leave for each listed device, in order
//	norms V1 V2 ... dim=N [along=A1,A2,...]
//	                           the Answer to query-norms: the replicas' L2
//	                           norms (and their way along the centre's
//	                           momentum)
//	consensus C1 C2 ... [norms=N1,N2,...]
//	                           the Answer to query-consensus: the AdaCons
//	                           coefficients (nan allowed) and the gradients'
//	                           norms
//	# text                     a comment, kept
package strategytest

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the transcripts in testdata from the current code")

// Run replays every script file given and fails the test on the first
// transcript that differs from the file.
func Run(t *testing.T, files ...string) {
	t.Helper()
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Replay(string(want))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if *rewrite {
			if err := os.WriteFile(f, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got != string(want) {
			t.Errorf("%s: transcript differs (run with -rewrite and review the diff):\n%s", f, diff(string(want), got))
		}
	}
}

// Replay runs the commands of a script and returns the script with each
// command's actions written after it.
func Replay(script string) (string, error) {
	var out strings.Builder
	var s strategy.Strategy
	sc := bufio.NewScanner(strings.NewReader(script))
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(text), "->") {
			continue // a recorded action: regenerated below
		}
		out.WriteString(text + "\n")
		f := strings.Fields(text)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		var events []strategy.Event
		switch f[0] {
		case "new":
			var err error
			if s, err = build(f[1:]); err != nil {
				return "", fmt.Errorf("line %d: %w", line, err)
			}
			continue
		case "start":
			events = append(events, strategy.Event{Kind: strategy.Start})
		case "collective":
			events = append(events, strategy.Event{Kind: strategy.CollectiveDone})
		case "done", "leave":
			kind := strategy.BatchDone
			if f[0] == "leave" {
				kind = strategy.Leave
			}
			for _, a := range f[1:] {
				d, err := strconv.Atoi(a)
				if err != nil {
					return "", fmt.Errorf("line %d: device %q", line, a)
				}
				events = append(events, strategy.Event{Kind: kind, Device: d})
			}
		case "consensus", "norms":
			// An Answer: a query's values and its second ones, named as the
			// transcripts of the two queries do.
			ev := strategy.Event{Kind: strategy.Answer}
			second := map[string]string{"consensus": "norms=", "norms": "along="}[f[0]]
			for _, a := range f[1:] {
				if v, ok := strings.CutPrefix(a, "dim="); ok {
					ev.Dim, _ = strconv.Atoi(v)
					continue
				}
				if list, ok := strings.CutPrefix(a, second); ok {
					var err error
					if ev.Second, err = floats(list, strings.TrimSuffix(second, "="), line); err != nil {
						return "", err
					}
					continue
				}
				v, err := strconv.ParseFloat(a, 64)
				if err != nil {
					return "", fmt.Errorf("line %d: value %q", line, a)
				}
				ev.Values = append(ev.Values, v)
			}
			events = append(events, ev)
		default:
			return "", fmt.Errorf("line %d: unknown command %q", line, f[0])
		}
		if s == nil {
			return "", fmt.Errorf("line %d: no strategy (use new first)", line)
		}
		for _, ev := range events {
			for _, a := range s.Step(ev, nil) {
				out.WriteString("  -> " + Format(a) + "\n")
			}
		}
	}
	return out.String(), sc.Err()
}

func build(args []string) (strategy.Strategy, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("new needs a strategy name")
	}
	cfg := strategy.Config{Options: map[string]float64{}}
	for _, a := range args[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("argument %q is not key=value", a)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %v", a, err)
		}
		switch k {
		case "devices":
			cfg.Devices = int(x)
		case "batch":
			cfg.Batch = int(x)
		case "lr":
			cfg.LR = x
		case "size":
			cfg.DatasetSize = int(x)
		default:
			cfg.Options[k] = x
		}
	}
	s, _, err := strategy.New(args[0], cfg)
	return s, err
}

// Format writes an action on one line.
func Format(a strategy.Action) string {
	g, gs := strategy.G, strategy.Gs
	switch a.Kind {
	case strategy.Dispatch:
		mode := [...]string{"step", "gradient", "pull"}[a.Mode]
		return fmt.Sprintf("dispatch dev=%d batch=%d lr=%s %s", a.Device, a.Batch, g(a.LR), mode)
	case strategy.AllReduce:
		s := fmt.Sprintf("all-reduce lr=%s weights=%s", g(a.LR), gs(a.Weights))
		if a.Layered {
			s += " layered"
		}
		if a.Note != "" {
			s += " | note: " + a.Note
		}
		return s
	case strategy.Collective, strategy.Query, strategy.Commit:
		op, err := strategy.NewOp(a.Op)
		if err != nil {
			return fmt.Sprintf("%s of an unknown op %q", a.Kind, a.Op)
		}
		s := op.Format(&a)
		if r := a.Record; r != nil {
			s += fmt.Sprintf(" | batches=%v lrs=%s updates=%v perturbed=%v", r.BatchSizes, gs(r.LRs), r.Updates, r.Perturbed)
			if r.Restarted {
				s += " restarted"
			}
		}
		return s
	}
	return a.Kind.String()
}

func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("first difference at line %d:\n  want: %s\n  got:  %s", i+1, a, b)
		}
	}
	return ""
}

// floats reads a comma-separated list of numbers of a script's line.
func floats(list, what string, line int) ([]float64, error) {
	var out []float64
	for _, x := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s %q", line, what, x)
		}
		out = append(out, v)
	}
	return out, nil
}
