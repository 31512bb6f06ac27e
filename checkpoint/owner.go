package checkpoint

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/internal/bounded"
)

// A folder of checkpoints belongs to one run. The file run.json in it names
// the run (Owner), and a run that writes checkpoints holds a lock on the
// folder (the file .lock, locked with flock; the lock ends with its
// process, however it ends). So:
//
//   - a new run refuses a folder that holds another run's checkpoints, and
//     two runs never write (and prune) one folder at once;
//   - a copy of a folder is told from the folder itself by the folder's
//     identity (its device and inode, which run.json records): resumed, a
//     copy becomes a run of its own, which does not write into the
//     original (see Claim);
//   - a bad folder (a file, a link to nothing, a place that cannot be
//     written) is found when it is claimed, before the run does any work.

const (
	ownerFile = "run.json"
	lockFile  = ".lock"
)

// Owner is the record of the run a folder of checkpoints belongs to.
type Owner struct {
	Run     string `json:"run"`     // the run's id (NewRunID)
	Created string `json:"created"` // when the run claimed the folder (RFC 3339)
	// From is, for a run that branched off another's checkpoint (resumed
	// from a copy of its folder, or into a new folder), the checkpoint it
	// began at.
	From string `json:"from,omitempty"`
	// Folder is the folder's identity when it was claimed (nil where the
	// system has none): a copy of the folder has another one.
	Folder *FileID `json:"folder,omitempty"`
}

// FileID is a file's identity on its machine: its device and inode.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IDOf returns the identity of the file path (following links); nil when
// the system gives files none.
func IDOf(path string) (*FileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return fileID(fi), nil
}

// NewRunID returns a new run's id: the time it started and 48 random bits,
// "20261126-091320-5f0c2a9be3d1".
func NewRunID() string {
	var b [6]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Owner reads the record of the run the folder belongs to; ok is false when
// it has none (an empty folder, one that does not exist, or one of an
// earlier hetsgd).
func (d Dir) Owner() (o Owner, ok bool, err error) {
	b, err := bounded.ReadFile(filepath.Join(string(d), ownerFile), 1<<16, "the record of a run")
	if errors.Is(err, fs.ErrNotExist) {
		return o, false, nil
	}
	if err != nil && !errors.Is(err, bounded.ErrTooLong) {
		return o, false, fmt.Errorf("checkpoint: %w", err)
	}
	if err != nil || json.Unmarshal(b, &o) != nil || o.Run == "" {
		return o, false, fmt.Errorf("checkpoint: %s is not the record of a run (%s): remove it if the folder's checkpoints are yours", filepath.Join(string(d), ownerFile), ownerFile)
	}
	return o, true, nil
}

// Copied reports whether the folder d is not the one o was claimed in: a
// copy of it (or the folder moved to another file system or machine).
// Renaming or moving a folder within its file system keeps it the same.
func (o Owner) Copied(d Dir) bool {
	if o.Folder == nil {
		return false
	}
	id, err := IDOf(string(d))
	return err == nil && id != nil && *id != *o.Folder
}

// Describe names the run for messages: "run 20261126-091320-5f0c2a9be3d1
// (started 2026-11-26T09:13:20Z)".
func (o Owner) Describe() string {
	s := "run " + o.Run
	if o.Created != "" {
		s += " (started " + o.Created + ")"
	}
	return s
}

// Claim makes d the folder of run o.Run's checkpoints and locks it for this
// process, before the run does any work: the folder is made if absent,
// and must be a folder this process can write. It refuses
//
//   - a folder another process has claimed (a run going on);
//   - a folder that holds checkpoints of another run, or checkpoints but
//     no record of their run (an earlier hetsgd's) — unless adopt: a
//     resumed run that continues the checkpoints of the folder it resumes
//     from (a copy of another run's folder becomes the new run's).
//
// Claim writes o into the folder's record with the folder's identity. The
// lock holds until Release or the end of the process.
func (d Dir) Claim(o Owner, adopt bool) (*Claim, error) {
	dir := string(d)
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if _, err := os.Stat(dir); err != nil {
			target, _ := os.Readlink(dir)
			return nil, fmt.Errorf("checkpoint: folder %s is a symbolic link to %s, which does not exist: make that folder, or name another", dir, target)
		}
	}
	switch fi, err := os.Stat(dir); {
	case err == nil && !fi.IsDir():
		return nil, fmt.Errorf("checkpoint: %s is %s, not a folder: name a folder for the checkpoints", dir, kindOf(fi.Mode()))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("checkpoint: folder %s: %w", dir, unwrapPath(err))
	}
	_, statErr := os.Stat(dir)
	made := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("checkpoint: making the folder %s: %w", dir, unwrapPath(err))
	}
	lock, err := d.lock()
	if err != nil {
		return nil, err
	}
	_, bestErr := os.Lstat(d.Best())
	c := &Claim{dir: d, lock: lock, made: made, hadBest: bestErr == nil}
	fail := func(err error) (*Claim, error) {
		c.Release()
		if made {
			os.Remove(dir) // only if empty
		}
		return nil, err
	}
	// The folder's own files are written by renames, never through a
	// link, but one planted at their names would fail the run at its
	// first evaluation or checkpoint, an epoch in: refused now.
	if err := d.checkOwnFiles(); err != nil {
		return fail(err)
	}
	was, ok, err := d.Owner()
	if err != nil {
		return fail(err)
	}
	if ok {
		c.prev, _ = bounded.ReadFile(filepath.Join(dir, ownerFile), 1<<16, "the record of a run")
	}
	list, err := d.List()
	if err != nil {
		return fail(err)
	}
	c.before = list
	// A folder without checkpoints is anyone's: a run that failed before
	// its first may have left its record.
	if !adopt && len(list) > 0 && (!ok || was.Run != o.Run) {
		whose := "another run (" + filepath.Base(list[len(list)-1]) + ")"
		if ok {
			whose = was.Describe()
		}
		return fail(fmt.Errorf("checkpoint: folder %s holds the checkpoints of %s: a folder holds one run's checkpoints (continue that run with --resume %s, or name another folder)", dir, whose, dir))
	}
	if ok && o.Created == "" {
		o.Created = was.Created
	}
	if o.Created == "" {
		o.Created = time.Now().UTC().Format(time.RFC3339)
	}
	if o.Folder, err = IDOf(dir); err != nil {
		return fail(fmt.Errorf("checkpoint: folder %s: %w", dir, err))
	}
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ownerFile), append(b, '\n'), true); err != nil {
		return fail(fmt.Errorf("checkpoint: folder %s cannot be written: %w", dir, err))
	}
	c.owner = o
	return c, nil
}

// Claim is a run's hold on its checkpoint folder.
type Claim struct {
	dir   Dir
	lock  *os.File
	owner Owner
	// What Abandon puts back: the folder's record as it was (nil: none),
	// whether the claim made the folder, and its checkpoints then.
	prev    []byte
	made    bool
	before  []string
	hadBest bool
	// attached are the files Attach wrote that were not there before.
	attached []string
}

// Attach writes a file the run's models need beside its checkpoints, as
// name in the folder: a text vectorizer that turns text into the model's
// inputs, say, so that the folder is enough to score text. A file of that
// name already there with the same bytes is kept (a resumed run's); with
// other bytes it is refused, named. Abandon removes a file Attach wrote.
func (c *Claim) Attach(name string, b []byte) error {
	path := filepath.Join(string(c.dir), name)
	had, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(had, b):
		return nil
	case err == nil:
		return fmt.Errorf("checkpoint: %s is another run's (its bytes differ from this run's): give another --checkpoint folder, or remove it", path)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, false); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	c.attached = append(c.attached, path)
	return nil
}

// Owner returns the record the claim wrote.
func (c *Claim) Owner() Owner { return c.owner }

// Release gives the folder up: its lock file is removed, and the lock
// ends. It may be called more than once.
func (c *Claim) Release() {
	if c != nil && c.lock != nil {
		// Removed while locked: a process that opened it meanwhile finds,
		// once it holds the lock, that the name is no longer its file,
		// and takes the lock anew (lock).
		if sameFile(c.lock, filepath.Join(string(c.dir), lockFile)) {
			os.Remove(filepath.Join(string(c.dir), lockFile))
		}
		c.lock.Close() // closing the file ends the lock
		c.lock = nil
	}
}

// lock opens the folder's lock file, making it if absent, and locks it
// for this process, with its process id in it for the message of a run
// refused the folder. The lock file is written in place: a link at its
// name is refused (atomicfile.CreateInPlace), never written through.
func (d Dir) lock() (*os.File, error) {
	dir, path := string(d), filepath.Join(string(d), lockFile)
	for range 8 {
		lock, _, err := atomicfile.CreateInPlace(path, os.O_RDWR, 0o666)
		if errors.Is(err, atomicfile.ErrLink) {
			return nil, fmt.Errorf("checkpoint: the folder's lock file %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: folder %s cannot be written: %w", dir, unwrapPath(err))
		}
		if err := lockFileNB(lock); err != nil {
			defer lock.Close()
			if errors.Is(err, errLocked) {
				return nil, d.inUse(lock)
			}
			return nil, fmt.Errorf("checkpoint: locking the folder %s: %w", dir, err)
		}
		if !sameFile(lock, path) {
			lock.Close() // released and removed since it was opened: again
			continue
		}
		if err := lock.Truncate(0); err == nil {
			lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return lock, nil
	}
	return nil, fmt.Errorf("checkpoint: locking the folder %s: its lock file keeps being replaced", dir)
}

// inUse is the refusal of a folder whose lock another process holds.
func (d Dir) inUse(lock *os.File) error {
	who := "another process"
	b := make([]byte, 32)
	if n, _ := lock.ReadAt(b, 0); n > 0 {
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil {
			who = "process " + strconv.Itoa(pid)
		}
	}
	owner := ""
	if was, ok, _ := d.Owner(); ok {
		owner = ", " + was.Describe()
	}
	return fmt.Errorf("checkpoint: folder %s is in use by %s writing its checkpoints%s: a folder holds one run's checkpoints (name another)", string(d), who, owner)
}

// sameFile reports whether path still names the open file f.
func sameFile(f *os.File, path string) bool {
	fi, err1 := f.Stat()
	pi, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(fi, pi)
}

// checkOwnFiles refuses a folder in which a name of its own files — a
// checkpoint, best.hck, run.json — is a symbolic link or not a regular
// file.
func (d Dir) checkOwnFiles() error {
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == lockFile || !Reserved(name) || strings.HasPrefix(name, ".") || e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(string(d), name)
		what := "is " + atomicfile.Kind(e.Type())
		if target, err := os.Readlink(p); err == nil {
			what += " to " + target
		}
		return fmt.Errorf("checkpoint: folder %s: %s %s: the folder's own files (checkpoints, %s, %s) are regular files, never links (remove it, or name another folder)", string(d), name, what, bestName, ownerFile)
	}
	return nil
}

// kindOf names what a path that is not a folder is, for messages.
func kindOf(m fs.FileMode) string {
	if m.IsRegular() {
		return "a file"
	}
	return atomicfile.Kind(m)
}

// unwrapPath drops the *fs.PathError's own path, which the messages name
// already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Abandon gives the folder up after a run that wrote no checkpoint into it
// (it failed before its first): the folder is left as the claim found it —
// its record of the run as it was, a best model the run kept removed when
// the folder had none (predict --which best would take a failed run's
// model for a run's), and a folder the claim made removed again. After a
// checkpoint was written it only releases the lock.
func (c *Claim) Abandon() {
	if c == nil || c.lock == nil {
		return
	}
	defer c.Release()
	if list, _ := c.dir.List(); !slices.Equal(list, c.before) {
		return
	}
	for _, path := range c.attached {
		os.Remove(path)
	}
	dir := string(c.dir)
	if !c.hadBest {
		os.Remove(c.dir.Best())
	}
	if c.prev != nil {
		atomicfile.WriteFile(filepath.Join(dir, ownerFile), c.prev, true)
		return
	}
	os.Remove(filepath.Join(dir, ownerFile))
	if c.made {
		c.Release()    // its lock file goes with it
		os.Remove(dir) // only if empty
	}
}
