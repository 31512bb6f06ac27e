package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrExist is returned (wrapped) by Create when the target exists and may
// not be overwritten.
var ErrExist = fs.ErrExist

// staleAge is how old a temporary file must be before it is removed even
// when its writer's process id is in use: the id may have been reused.
const staleAge = 24 * time.Hour

// File is an output being written under a temporary name.
type File struct {
	path string
	tmp  *os.File
	done bool
}

// Create starts writing path. An existing path is an error unless
// overwrite; an existing path that is not a regular file is always an
// error, so that a device node or a link is never replaced by accident.
func Create(path string, overwrite bool) (*File, error) {
	if err := checkTarget(path, overwrite); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	RemoveStale(path)
	tmp, err := os.CreateTemp(dir, tempPrefix(base)+strconv.Itoa(os.Getpid())+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("atomicfile: %w", err)
	}
	return &File{path: path, tmp: tmp}, nil
}

// checkTarget refuses a target that exists (unless overwrite) or that is not
// a regular file.
func checkTarget(path string, overwrite bool) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("atomicfile: %w", err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("atomicfile: %s exists and is not a regular file (%s): refusing to replace it", path, Kind(fi.Mode()))
	case !overwrite:
		return fmt.Errorf("atomicfile: %s %w (choose another name, or overwrite it with --force)", path, ErrExist)
	}
	return nil
}

// Kind names what a file that is not regular is, for messages: "a symbolic
// link", "a folder", "a FIFO", "a device", "a socket".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// tempPrefix is the start of the temporary names of target base: hidden,
// and naming the target, so a listing shows what they belong to.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// Name returns the target's path.
func (f *File) Name() string { return f.path }

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.tmp.Write(p)
	if err != nil {
		err = fmt.Errorf("atomicfile: writing %s: %w", f.path, err)
	}
	return n, err
}

// WriteAt writes to the temporary file at an offset.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.tmp.WriteAt(p, off)
	if err != nil {
		err = fmt.Errorf("atomicfile: writing %s: %w", f.path, err)
	}
	return n, err
}

// Commit syncs the content to disk and renames it onto the target. After an
// error the target is as it was and the temporary file is gone.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("atomicfile: %s already committed or aborted", f.path)
	}
	f.done = true
	err := f.tmp.Sync()
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The target may have become a link or a device while we wrote.
		err = checkTarget(f.path, true)
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("atomicfile: writing %s: %w", f.path, err)
	}
	syncDir(filepath.Dir(f.path)) // the rename itself survives a power cut
	return nil
}

// Abort drops what was written; the target is untouched. It does nothing
// after Commit, so it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}

// WriteFile writes b to path atomically.
func WriteFile(path string, b []byte, overwrite bool) error {
	f, err := Create(path, overwrite)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Commit()
}

// RemoveStale removes the temporary files of target path left by writers
// that died: those whose process is gone, and any older than a day.
func RemoveStale(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStale(dir, tempPrefix(base))
}

// RemoveStaleIn removes the temporary files of every target in folder dir
// left by writers that died, as RemoveStale does for one target: for a
// folder of outputs named as they are written (checkpoints), whose next
// target is never the same as the one a dead writer left.
func RemoveStaleIn(dir string) { removeStale(dir, ".") }

// removeStale removes dir's temporary files whose names start with prefix
// and whose writer is gone.
func removeStale(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		// ".TARGET.tmp-PID.RANDOM.tmp": the writer's process id follows
		// the last ".tmp-".
		k := strings.LastIndex(name, ".tmp-")
		if !strings.HasPrefix(name, prefix) || k < 0 || !strings.HasSuffix(name, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		rest := name[k+len(".tmp-"):]
		pid, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, '.'))])
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if pid != os.Getpid() && !alive(pid) || time.Since(info.ModTime()) > staleAge {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// Distinct returns an error if the output out is the same file as one of
// inputs (through any path or link): writing it would destroy the input.
// Inputs that do not exist, and an output that does not, are distinct.
func Distinct(out string, inputs ...string) error {
	ofi, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		ifi, err := os.Stat(in)
		if err == nil && os.SameFile(ofi, ifi) {
			return fmt.Errorf("atomicfile: %s is the input %s: refusing to overwrite an input", out, in)
		}
	}
	return nil
}
