package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const avail = `Package: zsh
Version: 5.9-4+b15
Description: shell with lots of features
Tag: implemented-in::c, interface::shell,
 role::program, scope::utility
Description-md5: aaa

Package: untagged
Description: nothing to label
Description-md5: bbb

Package: zsh
Description: a second version, skipped
Tag: role::program
Description-md5: ccc

Package: terse
Description: only a synopsis	with a tab
Tag: role::program
Description-md5: ddd
`

const translation = `Package: zsh
Description-md5: aaa
Description-en: shell with lots of features
 Zsh is a UNIX command interpreter.
 .
 It resembles ksh.
`

func TestCorpus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := filepath.Join(dir, "out")
	// Every package to the training file: a test split of one in two
	// would depend on these names' hashes.
	if err := run(write("avail", avail), write("trans", translation), out, 1<<30); err != nil {
		t.Fatal(err)
	}
	var all string
	for _, f := range []string{"train.tsv", "test.tsv"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		all += string(b)
	}
	want := "implemented-in::c,interface::shell,role::program,scope::utility\tshell with lots of features Zsh is a UNIX command interpreter. It resembles ksh.\n" +
		"role::program\tonly a synopsis with a tab\n"
	if all != want {
		t.Errorf("corpus\n%q\nwant\n%q", all, want)
	}
	if err := run(filepath.Join(dir, "avail"), filepath.Join(dir, "trans"), out, 5); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a second run over the corpus: %v, want a refusal to replace it", err)
	}
}

func TestParseStanzasRefuses(t *testing.T) {
	for _, in := range []string{" continued\n", "no colon here\n", ": empty name\n"} {
		if err := parseStanzas(strings.NewReader(in), func(stanza) {}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	var got []stanza
	if err := parseStanzas(strings.NewReader("A: 1\n\n\nB: 2\n c\n"), func(s stanza) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if want := []stanza{{"A": "1"}, {"B": "2\n c"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("stanzas %v, want %v", got, want)
	}
}

func FuzzParseStanzas(f *testing.F) {
	f.Add(avail)
	f.Add(translation)
	f.Fuzz(func(t *testing.T, in string) {
		_ = parseStanzas(strings.NewReader(in), func(s stanza) {
			for k, v := range s {
				if k == "" || strings.Contains(k, "\n") {
					t.Fatalf("field name %q", k)
				}
				if strings.ContainsRune(text(v), '\t') || strings.ContainsRune(text(v), '\n') {
					t.Fatalf("text %q keeps a tab or newline", text(v))
				}
				for _, tag := range tags(v) {
					if tag == "" || strings.Contains(tag, ",") {
						t.Fatalf("tag %q", tag)
					}
				}
			}
		})
	})
}
