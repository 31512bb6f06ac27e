package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/setting"
)

// Log writes a run log as JSON Lines: one JSON object per line, each with an
// "event" field. Each record goes to the output in one write, and a write
// that fails part-way (a full disk) is cut back to the last whole record, so
// a log read while a run is going, or after it crashed or ran out of space,
// holds whole records only, and every record written before is kept.
type Log struct {
	name string
	w    io.Writer
	f    *os.File // the file CreateLog opened, closed by Close (nil for NewLog)
	// cut shortens the output to n bytes and writes on from there; nil when
	// it cannot be done (a pipe, a terminal, an arbitrary writer).
	cut func(n int64) error
	// sync makes the records durable at Close; nil when there is nothing to
	// sync (a pipe, a terminal).
	sync   func() error
	end    int64  // bytes of the whole records written
	crc    uint32 // CRC-32C of those bytes
	buf    bytes.Buffer
	enc    *json.Encoder // encodes into buf, so a record reaches w in one write
	err    error         // set when the output ends with part of a record
	closed bool
	// also receives every record written, as written (a live view).
	also func(line []byte)
	// made: CreateLog made the file (or emptied it): closed without a
	// whole record in it, it is removed, so that a run that failed before
	// its first record leaves no empty log that a new run would need
	// --force to replace.
	made bool
}

func newLog(name string, w io.Writer, cut func(int64) error) *Log {
	l := &Log{name: name, w: w, cut: cut}
	l.enc = json.NewEncoder(&l.buf)
	return l
}

// CreateLog creates the log file path. An existing file is an error unless
// overwrite is set, so an earlier run's log is never lost by accident.
//
// A FIFO, a terminal and the standard streams (/dev/stdout, /dev/stderr,
// /dev/fd/N, as a shell's process substitution names them) are written to
// as they are: nothing is truncated, with or without overwrite. Any other
// path that is not a regular file (a folder, a symbolic link, a block
// device, a socket) is an error: a log never replaces it.
//
// inputs are the run's input files: a path that is one of them (through any
// name or link) is an error, since overwriting it would destroy the data.
func CreateLog(path string, overwrite bool, inputs ...string) (*Log, error) {
	if err := atomicfile.Distinct(path, inputs...); err != nil {
		return nil, fmt.Errorf("runlog: %w (name another log file)", err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// O_EXCL: a file (or link) that appeared since is not followed or
		// replaced.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return nil, existsErr(path)
		}
		if err != nil {
			return nil, fmt.Errorf("runlog: %w", err)
		}
		l := fileLog(path, f)
		l.made = true
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("runlog: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0 && isStream(path):
		if fi, err = os.Stat(path); err != nil {
			return nil, fmt.Errorf("runlog: %w", err)
		}
		if fi.IsDir() {
			return nil, notFileErr(path, fi.Mode())
		}
		return streamLog(path, fi.Mode().IsRegular())
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0:
		return streamLog(path, false)
	case !fi.Mode().IsRegular():
		return nil, notFileErr(path, fi.Mode())
	case !overwrite:
		return nil, existsErr(path)
	}
	// Truncate only once the opened file is known to be the regular file
	// checked above, not whatever replaced it in between, and the file's
	// only name: a log is written in place, and a second name (a hard
	// link) of a file of the user's would have it overwritten.
	f, err := atomicfile.OpenInPlace(path, os.O_WRONLY)
	if errors.Is(err, atomicfile.ErrLink) {
		return nil, fmt.Errorf("runlog: log file %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	ofi, err := f.Stat()
	if err == nil && !os.SameFile(fi, ofi) {
		err = fmt.Errorf("%s was replaced while being opened: not overwriting it", path)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close() // nothing was written: its error would add nothing
		return nil, fmt.Errorf("runlog: log file %s: %w", path, err)
	}
	l := fileLog(path, f)
	l.made = true
	return l, nil
}

// Position is where a log stood when a checkpoint was taken: the end of its
// last record, and the CRC-32C (Castagnoli) of every byte before it.
type Position struct {
	Offset int64
	CRC    uint32
	HasCRC bool // false for checkpoints of an earlier hetsgd, which kept none
}

// AppendLog opens the existing log file path to continue it from at, the
// end of its last record a checkpoint counted: a resumed run's log. The
// records after at, written by the run after that checkpoint and before it
// stopped, are moved to a file beside the log, path+".cut-OFFSET" (or
// ".cut-OFFSET.N", never replacing an earlier one: kept, not lost), and cut
// from the log, so that the log reads as one run. A file shorter than at,
// or whose bytes before at are not those the checkpoint counted (their
// checksum differs), is not the log the checkpoint counted: an error, and
// the file is left as it is.
func AppendLog(path string, at Position, inputs ...string) (*Log, error) {
	if err := atomicfile.Distinct(path, inputs...); err != nil {
		return nil, fmt.Errorf("runlog: %w (name another log file)", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("runlog: continuing the log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notFileErr(path, fi.Mode())
	}
	f, err := atomicfile.OpenInPlace(path, os.O_RDWR)
	if errors.Is(err, atomicfile.ErrLink) {
		return nil, fmt.Errorf("runlog: log file %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	fail := func(err error) (*Log, error) {
		f.Close()
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		return fail(fmt.Errorf("runlog: %w", err))
	}
	size := fi.Size()
	if size < at.Offset {
		return fail(setting.Errorf("runlog", "runlog: log file %s has %d bytes, fewer than the %d the checkpoint counted: it is not that run's log (log to a new file: {AppendLog.path})", path, size, at.Offset))
	}
	crc := crc32.New(castagnoli)
	if _, err := io.Copy(crc, io.NewSectionReader(f, 0, at.Offset)); err != nil {
		return fail(fmt.Errorf("runlog: %w", err))
	}
	if at.HasCRC && crc.Sum32() != at.CRC {
		return fail(setting.Errorf("runlog", "runlog: log file %s does not hold the records the checkpoint counted (its first %d bytes differ): it is not that run's log, or was changed since (log to a new file: {AppendLog.path})", path, at.Offset))
	}
	if size > at.Offset {
		tail := make([]byte, size-at.Offset)
		if _, err := f.ReadAt(tail, at.Offset); err != nil {
			return fail(fmt.Errorf("runlog: %w", err))
		}
		if err := keepTail(fmt.Sprintf("%s.cut-%d", path, at.Offset), tail); err != nil {
			return fail(fmt.Errorf("runlog: keeping the records after the checkpoint: %w", err))
		}
		if err := f.Truncate(at.Offset); err != nil {
			return fail(fmt.Errorf("runlog: log file %s: %w", path, err))
		}
	}
	if _, err := f.Seek(at.Offset, io.SeekStart); err != nil {
		return fail(fmt.Errorf("runlog: %w", err))
	}
	l := fileLog(path, f)
	l.end, l.crc = at.Offset, crc.Sum32()
	return l, nil
}

// keepTail writes the records cut from a log into a new file named name,
// or name.1, name.2, … when that exists: a run resumed twice from one
// checkpoint keeps both runs' records.
func keepTail(name string, tail []byte) error {
	for i := 0; ; i++ {
		p := name
		if i > 0 {
			p = fmt.Sprintf("%s.%d", name, i)
		}
		err := atomicfile.WriteFile(p, tail, false)
		if !errors.Is(err, atomicfile.ErrExist) || i >= 1000 {
			return err
		}
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileLog writes to a regular file of CreateLog's, empty and at offset 0.
func fileLog(path string, f *os.File) *Log {
	l := newLog(path, f, func(n int64) error {
		if err := f.Truncate(n); err != nil {
			return err
		}
		_, err := f.Seek(n, io.SeekStart)
		return err
	})
	l.f, l.sync = f, f.Sync
	return l
}

// streamLog writes to a pipe, a terminal or a standard stream: appended to,
// never truncated, since what else writes to it owns the rest of it. A
// standard stream redirected to a regular file is synced at Close.
func streamLog(path string, regular bool) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	l := newLog(path, f, nil)
	l.f = f
	if regular {
		l.sync = f.Sync
	}
	return l, nil
}

// isStream reports whether path names one of the process's open files
// (a standard stream, or a shell's process substitution), which are links
// by nature.
func isStream(path string) bool {
	switch path {
	case "/dev/stdout", "/dev/stderr":
		return true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(path, dir); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

func existsErr(path string) error {
	return setting.Errorf("runlog", "runlog: log file %s already exists (choose another name, or overwrite it: {CreateLog.overwrite})", path)
}

func notFileErr(path string, m fs.FileMode) error {
	return fmt.Errorf("runlog: log file %s is %s, not a regular file: refusing to write a log over it (name a file)", path, atomicfile.Kind(m))
}

// NewLog writes a log to w (tests, standard output).
func NewLog(w io.Writer) *Log { return newLog("log", w, nil) }

// Also makes the log pass every record it writes from now on to f, as it
// reached the output: one JSON object ending in a newline, in a buffer f
// must copy to keep. f is called on the writer's goroutine and must not
// block (a live dashboard queues the line).
func (l *Log) Also(f func(line []byte)) {
	if l != nil {
		l.also = f
	}
}

// Write appends one record: a struct or map that marshals to a JSON object
// with an "event" field.
func (l *Log) Write(record any) error {
	if l == nil {
		return nil
	}
	if l.err != nil {
		return l.err
	}
	if l.closed {
		return fmt.Errorf("runlog: writing %s: the log is closed", l.name)
	}
	l.buf.Reset()
	if err := l.enc.Encode(record); err != nil { // Encode writes nothing on error
		return fmt.Errorf("runlog: encoding a %T log record: %w", record, err)
	}
	n, err := l.w.Write(l.buf.Bytes())
	if err == nil && n < l.buf.Len() {
		err = io.ErrShortWrite
	}
	if err == nil {
		l.end += int64(n)
		l.crc = crc32.Update(l.crc, castagnoli, l.buf.Bytes())
		if l.also != nil {
			l.also(l.buf.Bytes())
		}
		return nil
	}
	err = fmt.Errorf("runlog: writing %s: %w", l.name, err)
	if n <= 0 {
		return err // nothing reached the output: it still ends on a whole record
	}
	if l.cut != nil {
		cerr := l.cut(l.end)
		if cerr == nil {
			return err
		}
		err = errors.Join(err, fmt.Errorf("runlog: cutting %s back to its last whole record: %w", l.name, cerr))
	}
	// The output ends with part of a record: a record appended to it would
	// be glued to that part, so none is.
	l.err = fmt.Errorf("%w (%s ends with part of a record; no later record is written)", err, l.name)
	return l.err
}

// Offset returns where the next record goes: the bytes of the whole records
// in the output, counting those before the log was opened (AppendLog). A
// checkpoint records it, so that a resumed run's log continues from there.
func (l *Log) Offset() int64 {
	if l == nil {
		return 0
	}
	return l.end
}

// Position returns Offset with the checksum of the bytes before it.
func (l *Log) Position() Position {
	if l == nil {
		return Position{HasCRC: true}
	}
	return Position{Offset: l.end, CRC: l.crc, HasCRC: true}
}

// Sync makes the records written so far durable (nothing for a pipe or a
// terminal).
func (l *Log) Sync() error {
	if l == nil || l.sync == nil || l.closed {
		return nil
	}
	if err := l.sync(); err != nil {
		return fmt.Errorf("runlog: writing %s: %w", l.name, err)
	}
	return nil
}

// Close syncs a log file to disk and closes it. (A failed Write has
// returned its own error already.) A file CreateLog made that holds no
// record is removed.
func (l *Log) Close() error {
	if l == nil || l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.sync != nil {
		if serr := l.sync(); serr != nil && err == nil {
			err = fmt.Errorf("runlog: writing %s: %w", l.name, serr)
		}
	}
	if l.f != nil {
		empty := l.made && l.end == 0
		if empty {
			// Only if the name is still this file: never another's.
			fi, ferr := l.f.Stat()
			pi, perr := os.Lstat(l.name)
			empty = ferr == nil && perr == nil && os.SameFile(fi, pi)
		}
		if cerr := l.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("runlog: closing %s: %w", l.name, cerr)
		}
		if empty {
			os.Remove(l.name)
		}
	}
	return err
}
