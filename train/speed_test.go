package train_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/internal/race"
	"github.com/hetsgd/hetsgd/train"
)

// LearningCurve is the P@1 that hetsgd train reports after each epoch: the
// same run, the same seed.
func TestLearningCurveIsTheRuns(t *testing.T) {
	if race.Enabled {
		t.Skip("an epoch of Bibtex takes a minute under the race detector: the ordinary stage runs it")
	}
	trainSet, testSet, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	got, err := train.LearningCurve(context.Background(), trainSet, testSet, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runTrain(t, &out, "--epochs", "2", "--seed", "3"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && f[0] == "epoch" && f[1] != "0" {
			want = append(want, f[5])
		}
	}
	if len(got) != 2 || len(want) != 2 || strconv.FormatFloat(got[0], 'f', 4, 64) != want[0] || strconv.FormatFloat(got[1], 'f', 4, 64) != want[1] {
		t.Errorf("LearningCurve %v, the run's P@1 %v\n%s", got, want, out.String())
	}
}

// runTrain runs hetsgd train's job with the given flags, in one process,
// its report on out.
func runTrain(t *testing.T, out io.Writer, args ...string) error {
	t.Helper()
	var s train.Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	s.Register(fs)
	if err := fs.Parse(append([]string{"--progress", "off"}, args...)); err != nil {
		return err
	}
	return train.Run(context.Background(), &s, fs, nil, comm.Self(), train.Front{Stdout: out, Stderr: io.Discard, Message: func(err error) string { return err.Error() }, Progress: func() (bool, error) { return false, nil }})
}
