package main

import (
	"context"
	"flag"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/strategy"
)

func cutPrefix(s, prefix string) (string, bool) { return strings.CutPrefix(s, prefix) }

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// checkRanges checks every numeric flag given on fs that has a range in
// ranges (engine.Ranges), value by value for lists, before any work. The
// defaults are in range (tested), so only given flags are checked.
func checkRanges(fs *flag.FlagSet, ranges map[string]strategy.Range) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		r, ok := ranges[f.Name]
		if !ok || err != nil {
			return
		}
		for _, s := range strings.Split(f.Value.String(), ",") {
			v, perr := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if perr != nil {
				continue // not a number ("none" for --hidden): the flag's own Set judged it
			}
			if err = r.Check("--"+f.Name, v); err != nil {
				return
			}
		}
	})
	return err
}

// documentRanges adds each ranged flag's accepted values to its help text.
func documentRanges(fs *flag.FlagSet, ranges map[string]strategy.Range) {
	fs.VisitAll(func(f *flag.Flag) {
		if r, ok := ranges[f.Name]; ok {
			f.Usage += "; " + r.String()
		}
	})
}

// ctxWriter writes to w until ctx ends, then fails every write with ctx's
// error: an output written in many pieces stops at a signal.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
