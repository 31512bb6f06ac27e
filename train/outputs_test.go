package train

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// The sampled layer is warned against where it was measured slower, and
// only there; the dense layer never is.
func TestOutputNote(t *testing.T) {
	for _, c := range []struct {
		output string
		labels int
		warn   bool
	}{{"lsh", 159, true}, {"lsh", 983, true}, {"lsh", lshSmall - 1, true}, {"lsh", lshSmall, false}, {"lsh", 670091, false}, {"dense", 159, false}} {
		note := OutputNote(c.output, c.labels)
		if (note != "") != c.warn || c.warn && !strings.Contains(note, "--output dense is likely faster") {
			t.Errorf("--output %s on %d labels: %q", c.output, c.labels, note)
		}
	}
}

// A flag of the checkpoint folder without one is refused, naming the flag
// to add; with one, or not given, it is not.
func TestCheckOutputFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--keep-best"}, "--keep-best applies with --checkpoint only"},
		{[]string{"--keep-best=false"}, "--keep-best applies with --checkpoint only"},
		{[]string{"--checkpoint-every", "2"}, "--checkpoint-every applies with --checkpoint only"},
		{[]string{"--checkpoint-keep", "3"}, "(add --checkpoint DIR)"},
		{[]string{"--keep-best", "--checkpoint", "ck"}, ""},
		{nil, ""},
	} {
		var f Settings
		fs := flag.NewFlagSet("train", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := f.CheckOutputFlags(fs)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
