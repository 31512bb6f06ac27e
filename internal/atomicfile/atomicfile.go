package atomicfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	if err := CheckTarget(path, overwrite); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	RemoveStale(path)
	tmp, err := os.CreateTemp(dir, tempPrefix(base)+strconv.Itoa(os.Getpid())+".*.tmp")
	if err != nil {
		return nil, err
	}
	// CreateTemp makes the file private (0600); an output is made as any
	// other file is, by the umask (0644 under the usual 022), as the run
	// log is.
	if err := tmp.Chmod(0o666 &^ umask); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &File{path: path, tmp: tmp}, nil
}

// CheckTarget refuses a target that exists (unless overwrite) or that is not
// a regular file, as Create does: for a command to check its outputs
// before any work.
func CheckTarget(path string, overwrite bool) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a regular file (%s): refusing to replace it", path, Kind(fi.Mode()))
	case !overwrite:
		return fmt.Errorf("%s %w (choose another name, or overwrite it with --force)", path, ErrExist)
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
		err = fmt.Errorf("writing %s: %w", f.path, err)
	}
	return n, err
}

// WriteAt writes to the temporary file at an offset.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.tmp.WriteAt(p, off)
	if err != nil {
		err = fmt.Errorf("writing %s: %w", f.path, err)
	}
	return n, err
}

// Commit syncs the content to disk and renames it onto the target. After an
// error the target is as it was and the temporary file is gone.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s already committed or aborted", f.path)
	}
	f.done = true
	err := f.tmp.Sync()
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The target may have become a link or a device while we wrote.
		err = CheckTarget(f.path, true)
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("writing %s: %w", f.path, err)
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
// Inputs that do not exist, and an output that does not, are distinct. It
// is Inputs.Check for a list of paths.
func Distinct(out string, inputs ...string) error {
	var in Inputs
	for _, p := range inputs {
		in.Add("input", p)
	}
	return in.Check("output", out)
}

// Inputs are the files a command reads — its data, caches, config file,
// model, checkpoint — each with the flag or setting that names it, so that
// no output of the command is written over one of them. Check compares by
// identity (device and inode), not by name: another path, a relative one
// or a link to an input is found.
type Inputs struct {
	list []input
}

type input struct {
	what, path string
	fi         fs.FileInfo
}

// Add records path as an input that what names ("--config", "the cache of
// train.txt"). A folder adds itself and each file directly in it (a
// dataset folder's files). A path that does not exist is skipped: nothing
// can be written over it.
func (in *Inputs) Add(what, path string) {
	if path == "" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	in.list = append(in.list, input{what, path, fi})
	if !fi.IsDir() {
		return
	}
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			in.list = append(in.list, input{what, p, fi})
		}
	}
}

// Paths returns the inputs' paths.
func (in *Inputs) Paths() []string {
	var out []string
	for _, i := range in.list {
		out = append(out, i.path)
	}
	return out
}

// Check returns an error if out, an output that what names ("--log"), is
// one of the inputs, or a folder that holds one directly (an output folder
// gets files of its own written into it, and pruned) — except the inputs
// that mine names (by their what: a checkpoint folder holds the checkpoint
// its run resumes, and is the folder of its own earlier checkpoints). The
// error names both and says what to do.
func (in *Inputs) Check(what, out string, mine ...string) error {
	if in == nil || out == "" {
		return nil
	}
	ofi, err := os.Stat(out)
	if err != nil {
		return nil // a new file replaces no input
	}
	for _, i := range in.list {
		if !os.SameFile(ofi, i.fi) || ofi.IsDir() && slices.Contains(mine, i.what) {
			continue
		}
		name := i.what
		if i.fi.IsDir() {
			name += " folder"
		}
		if filepath.Clean(i.path) != filepath.Clean(out) {
			name += " " + i.path
		}
		return fmt.Errorf("%s %s is the %s: refusing to write over an input (name another)", what, out, name)
	}
	if !ofi.IsDir() {
		return nil
	}
	for _, i := range in.list {
		if i.fi.IsDir() || slices.Contains(mine, i.what) {
			continue
		}
		if dfi, err := os.Stat(filepath.Dir(i.path)); err == nil && os.SameFile(ofi, dfi) {
			return fmt.Errorf("%s %s holds the %s %s: an output folder holds outputs only (name another)", what, out, i.what, i.path)
		}
	}
	return nil
}

// Opened records a file a data.Loader reads as an input: the data file
// itself, or the binary cache it loads in its place (its Opened callback).
func (in *Inputs) Opened(path string, cache bool) {
	if cache {
		in.Add("data cache", path)
	} else {
		in.Add("data file", path)
	}
}

// IsDir reports whether path is an existing folder.
func IsDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// IsRegular reports whether path is an existing regular file (not a
// folder, a stream or a device).
func IsRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// Exists reports whether path names an existing file or folder.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// SameFile reports whether a and b name one existing file or folder.
func SameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// WriteWith writes path with write, through a buffer, and puts it in place
// only once all of it was written (Create, Commit): a write that fails or
// is stopped leaves nothing behind. Once ctx is done every write fails with
// its error, so that an output written in many pieces stops at a signal.
func WriteWith(ctx context.Context, path string, overwrite bool, write func(io.Writer) error) error {
	f, err := Create(path, overwrite)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(ctxWriter{ctx, f}, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// ctxWriter writes to w until ctx ends, then fails every write with ctx's
// error.
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
