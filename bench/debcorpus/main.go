// Command debcorpus makes a labelled text corpus of Debian's package
// descriptions: a package's text is its short and long English
// description, its labels its debtags (the Tag field), and the packages
// without tags are left out. It writes labels<TAB>text lines, the input of
// hetsgd data from-text, split into a training and a test file by a hash
// of the package's name, so that the split does not depend on the order of
// the archive's lists.
//
//	apt-cache dumpavail > avail.txt
//	/usr/lib/apt/apt-helper cat-file .../*_i18n_Translation-en.lz4 > translation.txt
//	go run ./bench/debcorpus --avail avail.txt --translations translation.txt --out DIR
//
// bench/debian_text.sh fetches the lists (into a folder of its own, not
// the system's) and runs the whole comparison.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	avail := flag.String("avail", "", "the packages' stanzas (apt-cache dumpavail)")
	trans := flag.String("translations", "", "the long descriptions' stanzas (Translation-en, uncompressed)")
	out := flag.String("out", "", "folder to write train.tsv and test.tsv into")
	every := flag.Int("test-every", 5, "one package in this many (by its name's hash) goes to the test file")
	flag.Parse()
	if *avail == "" || *trans == "" || *out == "" || *every < 2 {
		fmt.Fprintln(os.Stderr, "usage: debcorpus --avail FILE --translations FILE --out DIR [--test-every N ≥ 2]")
		os.Exit(2)
	}
	if err := run(*avail, *trans, *out, *every); err != nil {
		fmt.Fprintln(os.Stderr, "debcorpus:", err)
		os.Exit(1)
	}
}

func run(availPath, transPath, out string, every int) error {
	long := map[string]string{} // Description-md5 → the English description
	if err := readStanzas(transPath, func(s stanza) {
		if md5, d := s["Description-md5"], s["Description-en"]; md5 != "" && d != "" {
			long[md5] = d
		}
	}); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var files [2]*bufio.Writer
	var closers [2]*os.File
	for i, name := range []string{"train.tsv", "test.tsv"} {
		f, err := os.OpenFile(filepath.Join(out, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("%w (remove it to make the corpus again)", err)
		}
		closers[i], files[i] = f, bufio.NewWriter(f)
	}
	var n, tagged, missing [2]int
	seen := map[string]bool{}
	err := readStanzas(availPath, func(s stanza) {
		name := s["Package"]
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		h := fnv.New32a()
		h.Write([]byte(name))
		split := 0
		if h.Sum32()%uint32(every) == 0 {
			split = 1
		}
		n[split]++
		labels := tags(s["Tag"])
		if len(labels) == 0 {
			return
		}
		tagged[split]++
		d := s["Description"]
		if l, ok := long[s["Description-md5"]]; ok {
			d = l
		} else {
			missing[split]++
		}
		fmt.Fprintf(files[split], "%s\t%s\n", strings.Join(labels, ","), text(d))
	})
	for i := range files {
		if e := files[i].Flush(); err == nil {
			err = e
		}
		if e := closers[i].Close(); err == nil {
			err = e
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("{\"packages\": %d, \"tagged\": %d, \"train\": %d, \"test\": %d, \"short_only\": %d}\n",
		n[0]+n[1], tagged[0]+tagged[1], tagged[0], tagged[1], missing[0]+missing[1])
	return nil
}

// stanza is a control-file paragraph: its fields by name, a continued
// field's lines joined by newlines, their leading space kept.
type stanza map[string]string

// readStanzas calls f with each paragraph of the Debian control file at
// path, in order.
func readStanzas(path string, f func(stanza)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := parseStanzas(file, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// parseStanzas reads Debian control-file paragraphs from r: "Field: value"
// lines, a line starting with a space or tab continuing the field before
// it, a blank line between paragraphs.
func parseStanzas(r io.Reader, f func(stanza)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	s := stanza{}
	last := ""
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		switch {
		case len(bytes.TrimSpace(b)) == 0:
			if len(s) > 0 {
				f(s)
				s = stanza{}
			}
			last = ""
		case b[0] == ' ' || b[0] == '\t':
			if last == "" {
				return fmt.Errorf("line %d: a continuation line outside a field", line)
			}
			s[last] += "\n" + string(b)
		default:
			k, v, ok := bytes.Cut(b, []byte{':'})
			if !ok || len(k) == 0 {
				return fmt.Errorf("line %d: want \"Field: value\", have %.40q", line, b)
			}
			last = string(k)
			s[last] = string(bytes.TrimSpace(v))
		}
	}
	if len(s) > 0 {
		f(s)
	}
	return sc.Err()
}

// tags splits a Tag field into its debtags, which hold no commas.
func tags(field string) []string {
	var out []string
	for t := range strings.SplitSeq(field, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// text is a description as one line: the synopsis and the long
// description's lines, a " ." line (a blank) dropped, tabs as spaces.
func text(d string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(d, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "." {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	return strings.ReplaceAll(b.String(), "\t", " ")
}
