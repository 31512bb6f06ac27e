package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/hetsgd/hetsgd/internal/bounded"
	"github.com/hetsgd/hetsgd/runlog"
)

// Follow publishes the records of the log file path as run's, then
// follows the file, polling it every interval, and publishes each record
// appended to it, until ctx is done: a log that another process is writing
// shows live. It returns nil then, or at once the error of a file it cannot
// read at the start.
//
// Only complete records are published: a line is taken when its line break
// is written, or before if it already is a whole JSON object (the last
// line of a file written by hand may lack its line break). A line that is
// not a JSON object is skipped and reported to warn, if not nil, once,
// with the file and line.
//
// A log that shrinks, or whose last record read is no longer where it was,
// was cut back (a resumed run cuts its log to its checkpoint's records) or
// replaced (--force): the run is Reset and the file read again from its
// start as the run's new history. Clients are told to drop the run and
// receive the new history, so the page never shows records the log no
// longer holds. A file that disappears is reported once and waited for.
func (s *Server) Follow(ctx context.Context, run int, path string, interval time.Duration, warn func(error)) error {
	if warn == nil {
		warn = func(error) {}
	}
	f := &follower{s: s, run: run, path: path, warn: warn}
	defer f.close()
	if err := f.poll(); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := f.poll()
		var nl notLog
		switch {
		case errors.As(err, &nl):
			return err // not a log, or no longer one: followed no more
		case err != nil:
			if !f.missing {
				warn(err)
			}
			f.missing = true
			f.close()
		default:
			f.missing = false
		}
		if afterPoll != nil {
			afterPoll(run)
		}
	}
}

// afterPoll, when set (tests only, before Follow starts), runs after each
// poll of Follow's loop that does not end it, with the run: a test waits
// for polls through it rather than for a time.
var afterPoll func(run int)

// notLog is the error of a file that is not a run log: its first record is
// not a config record, or a line is longer than any record. Follow stops
// following it.
type notLog struct{ error }

// follower holds Follow's place in a file: everything before off is
// published (or skipped), and last, the last line taken, ends at off.
type follower struct {
	s    *Server
	run  int
	path string
	warn func(error)

	file    *os.File
	off     int64
	line    int    // lines taken
	last    []byte // the last line taken, as the file holds it
	midLine bool   // the last line taken was a whole object without its line break yet
	missing bool   // the last poll failed (reported)
	started bool   // the config record was taken: the file is a run log
	skipped int    // lines that are not records, skipped (the first reported)
	// from is where the last line taken before this poll began, and read
	// the checksum of that line and of what the poll has taken since: a
	// file rewritten while a poll reads it would give lines of both files,
	// so once it has read the poll checks that the file still holds them.
	start   int64 // where this poll began to read
	from    int64
	read    hash.Hash32
	warning error // about a line this poll skipped, said once checkRead holds
	// onLine, when set (tests), runs after each line taken.
	onLine func()
}

func (f *follower) close() {
	if f.file != nil {
		f.file.Close()
		f.file = nil
	}
}

// poll publishes the records written since the last poll.
func (f *follower) poll() error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	if f.file != nil {
		if cur, err := f.file.Stat(); err != nil || !os.SameFile(cur, fi) {
			f.close() // replaced: read the new file from its start
		}
	}
	if f.file == nil {
		if f.file, err = os.Open(f.path); err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		f.restart()
	}
	if fi.Size() < f.off || !f.lastInPlace() {
		f.restart()
	}
	if _, err := f.file.Seek(f.off, io.SeekStart); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	if f.read == nil {
		f.read = crc32.NewIEEE()
	}
	// The check covers the last line taken before this poll too: the file
	// may be rewritten between the check of it above and the reads.
	f.start, f.from = f.off, f.off-int64(len(f.last))
	f.read.Reset()
	f.read.Write(f.last)
	rd := bounded.NewLines(f.file, runlog.MaxRecordBytes)
	for {
		b, err := rd.Next()
		if errors.Is(err, bounded.ErrTooLong) {
			return notLog{fmt.Errorf("dashboard: %s:%d: a line longer than %d MiB, longer than any record: not a run log (no longer followed)", f.path, f.line+1, runlog.MaxRecordBytes>>20)}
		}
		if err == io.EOF {
			f.checkRead()
			return nil
		}
		if err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		ended := b[len(b)-1] == '\n'
		taken, err := f.take(b, ended)
		if err != nil || !taken {
			if !f.checkRead() {
				return nil // read again from the start: the error may be the mix's
			}
			return err // an unfinished last line: taken once whole
		}
		if f.onLine != nil {
			f.onLine()
		}
	}
}

// checkRead starts the history over at the next poll when the file no
// longer holds what this poll took where it took it: it was cut back or
// rewritten while this poll read it, and the lines taken may be of both
// files. (A rewrite after the check is found by the next poll's check of
// the last line taken, read before it.) It reports whether the file holds
// them.
func (f *follower) checkRead() bool {
	w := f.warning
	f.warning = nil
	if f.off == f.start {
		return true // nothing taken: the next poll checks the last line
	}
	now := crc32.NewIEEE()
	if _, err := io.Copy(now, io.NewSectionReader(f.file, f.from, f.off-f.from)); err != nil || now.Sum32() != f.read.Sum32() {
		f.restart()
		return false
	}
	if w != nil {
		f.warn(w)
	}
	return true
}

// restart makes the next read start at the file's beginning, the run's
// history starting over, unless nothing was read yet.
func (f *follower) restart() {
	if f.off > 0 { // every line taken moved off on
		f.s.Reset(f.run)
	}
	f.off, f.line, f.last, f.midLine, f.started, f.skipped = 0, 0, nil, false, false, 0
}

// lastInPlace reports whether the line last taken is still where it was
// read: if not, the file was rewritten.
func (f *follower) lastInPlace() bool {
	if len(f.last) == 0 {
		return true
	}
	b := make([]byte, len(f.last))
	_, err := f.file.ReadAt(b, f.off-int64(len(b)))
	return err == nil && bytes.Equal(b, f.last)
}

// take publishes or skips the line b (ended says it ends with its line
// break) and reports whether it was taken.
func (f *follower) take(b []byte, ended bool) (bool, error) {
	text := bytes.TrimRight(b, "\r\n")
	if f.midLine {
		// The rest of the line of an object taken before its line break:
		// spaces and the line break end it; anything else starts a line.
		if len(bytes.TrimSpace(text)) == 0 {
			f.midLine = !ended
			f.advance(b)
			return true, nil
		}
		f.midLine = false
	}
	switch {
	case !ended && !isObject(text):
		return false, nil
	case len(bytes.TrimSpace(text)) == 0:
	case !f.started:
		// A run log starts with its config record: a file that does not
		// is not one, and is not read line by line into warnings.
		var head struct{ Event string }
		if !isObject(text) || json.Unmarshal(text, &head) != nil || head.Event != "config" {
			return false, notLog{fmt.Errorf("dashboard: %s:%d: not a run log: it does not start with a config record (hetsgd train --log writes one)", f.path, f.line+1)}
		}
		f.started = true
		f.s.Publish(f.run, text)
	case !isObject(text):
		if f.skipped++; f.skipped == 1 {
			// Said once the poll knows the line is the file's (checkRead).
			f.warning = fmt.Errorf("dashboard: %s:%d: %w, skipped (and any more such lines of the file, silently)", f.path, f.line+1, notObject(text))
		}
	default:
		f.s.Publish(f.run, text)
	}
	f.line++
	f.midLine = !ended
	f.advance(b)
	return true, nil
}

func (f *follower) advance(b []byte) {
	f.off += int64(len(b))
	f.last = append(f.last[:0], b...)
	if f.read != nil {
		f.read.Write(b)
	}
}

// isObject reports whether b is one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// notObject says why b is not a JSON object.
func notObject(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("not a JSON object (%w)", err)
	}
	return errors.New("not a JSON object")
}
