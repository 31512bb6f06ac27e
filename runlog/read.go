package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hetsgd/hetsgd/internal/bounded"
)

// Run is a run log read back: its records by kind, in the order written.
type Run struct {
	Name     string  // the file's name
	Config   *Config // nil when the log has no config record
	Evals    []Eval
	Merges   []Merge
	Async    []Async
	Faults   []Fault
	Notes    []Note
	Resumes  []Resume
	Restarts []Restart
	Warnings []Warning
	Done     *Done // nil for a run that is going on or was killed
}

// Label names the run for a legend: a study run's name, else its strategy
// and devices (and a sampled output layer, with its shared rows' kind),
// else the file's name.
func (r *Run) Label() string {
	switch c := r.Config; {
	case c == nil:
		return r.Name
	case c.Name != "":
		return c.Name
	case c.Strategy != "":
		l := fmt.Sprintf("%s ×%d", c.Strategy, c.Devices)
		if out, _ := c.Settings.Lookup("output"); out == "lsh" {
			l += ", lsh"
			if fill, _ := c.Settings.Lookup("lsh-fill"); fill != nil {
				l += fmt.Sprintf(" %v fill", fill)
			}
		}
		return l
	}
	return r.Name
}

// FileNames names logs for a reader shown several of them (a dashboard's
// runs, a figure's legend): each by its file's name, or by its path as
// given when two files share a name (run.jsonl in two folders), so that
// no two are named alike and names stay short where they can.
func FileNames(paths []string) []string {
	count := map[string]int{}
	for _, p := range paths {
		count[filepath.Base(p)]++
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		if names[i] = filepath.Base(p); count[names[i]] > 1 {
			names[i] = p
		}
	}
	return names
}

// MaxRecordBytes bounds a record's line for readers: the longest record
// hetsgd writes (a merge of hundreds of devices) is a few hundred KB, and a
// file with longer lines is not a run log.
const MaxRecordBytes = 16 << 20

// ReadFile reads the run log at path.
func ReadFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// ReadFiles reads the run logs at paths, in order, and stops at the first
// that cannot be read. Between files it returns ctx's error, as is, once
// ctx is done: many long logs take a while, and an interrupt should not
// have to wait for them.
func ReadFiles(ctx context.Context, paths []string) ([]*Run, error) {
	runs := make([]*Run, len(paths))
	for i, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if runs[i], err = ReadFile(p); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// Read reads a run log from r; name is the file's, for errors. Records of
// kinds this version does not know are skipped, as are fields it does not
// know. A last line without its newline is a record still being written and
// is skipped too. A line that is not a JSON object, and a config record of a
// later schema, are errors naming the line.
func Read(r io.Reader, name string) (*Run, error) {
	run := &Run{Name: name}
	lines := bounded.NewLines(r, MaxRecordBytes)
	for line := 1; ; line++ {
		b, err := lines.Next()
		if errors.Is(err, io.EOF) || err == nil && b[len(b)-1] != '\n' {
			return run, nil // a partial last line is skipped
		}
		if errors.Is(err, bounded.ErrTooLong) {
			return nil, fmt.Errorf("runlog: %s:%d: a line longer than %d MiB, longer than any record: not a run log", name, line, MaxRecordBytes>>20)
		}
		if err != nil {
			return nil, fmt.Errorf("runlog: %s: %w", name, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := run.add(b); err != nil {
			return nil, fmt.Errorf("runlog: %s:%d: %w", name, line, err)
		}
	}
}

// add decodes one record into the run.
func (r *Run) add(b []byte) error {
	var head struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("not a JSON record: %w", err)
	}
	var err error
	switch head.Event {
	case "config":
		var c Config
		if err = json.Unmarshal(b, &c); err == nil && c.Schema > Schema {
			return fmt.Errorf("schema %d is later than this version's %d: read it with a later hetsgd", c.Schema, Schema)
		}
		if r.Config == nil {
			r.Config = &c
		}
	case "eval":
		err = appendRecord(b, &r.Evals)
	case "merge":
		var m Merge
		if err = json.Unmarshal(b, &m); err == nil {
			r.Merges = append(r.Merges, m)
		}
	case "async":
		err = appendRecord(b, &r.Async)
	case "fault":
		err = appendRecord(b, &r.Faults)
	case "note":
		err = appendRecord(b, &r.Notes)
	case "resume":
		err = appendRecord(b, &r.Resumes)
	case "warning":
		err = appendRecord(b, &r.Warnings)
	case "restart":
		err = appendRecord(b, &r.Restarts)
	case "done":
		var d Done
		if err = json.Unmarshal(b, &d); err == nil {
			r.Done = &d
		}
	case "":
		return errors.New(`a record without an "event"`)
	}
	if err != nil {
		return fmt.Errorf("%s record: %w", head.Event, err)
	}
	return nil
}

func appendRecord[T any](b []byte, list *[]T) error {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}
