package train

import "testing"

// A prefix said twice in a row by the layers an error passed through is
// said once; the same word apart, or inside a name, is kept.
func TestDedupPrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"data: data: x":                  "data: x",
		"tune: tune: tune: y":            "tune: y",
		"data: x.txt:3: data: bad":       "data: x.txt:3: data: bad",
		"--log a: checkpoint: folder ck": "--log a: checkpoint: folder ck",
		"foo: bar: foo: baz":             "foo: bar: foo: baz",
		"a:b: c: c: d":                   "a:b: c: d",
	} {
		if got := dedupPrefixes(in); got != want {
			t.Errorf("dedupPrefixes(%q) = %q, want %q", in, got, want)
		}
	}
}
