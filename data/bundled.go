package data

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed bundled
var bundled embed.FS

// BundledNames lists the datasets compiled into the binary.
func BundledNames() []string {
	entries, _ := bundled.ReadDir("bundled")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// Bundled returns the train and test sets of a dataset compiled into the
// binary (see BundledNames and bundled/PROVENANCE.md).
func Bundled(name string) (train, test *Dataset, err error) {
	load := func(split string) (*Dataset, error) {
		b, err := bundled.ReadFile("bundled/" + name + "/" + split + ".txt.gz")
		if err != nil {
			return nil, fmt.Errorf("data: no bundled dataset %q (have %s)", name, strings.Join(BundledNames(), ", "))
		}
		return Read(bytes.NewReader(b), name+"/"+split, XC)
	}
	if train, err = load("train"); err != nil {
		return nil, nil, err
	}
	if test, err = load("test"); err != nil {
		return nil, nil, err
	}
	return train, test, CheckPair(train, test)
}
