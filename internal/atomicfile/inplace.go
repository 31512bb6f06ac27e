package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// A file written in place — a log appended to, a lock file — is not
// replaced by a rename, so a link at its name would carry the writes to
// the file it points to: a symbolic link to a file of the user's, or a
// second name (a hard link) of one. OpenInPlace and CreateInPlace never
// write through either: a symbolic link is not followed (O_NOFOLLOW, and
// O_EXCL for a new file), and a regular file with more than one name is
// refused, checked on the opened file itself so that nothing swapped in
// between is written.

// ErrLink is matched (errors.Is) by the errors of OpenInPlace and
// CreateInPlace for a path that is a symbolic link, or a file with more
// than one name.
var ErrLink = errors.New("a link")

// linkErr is such an error: its message says what to do.
type linkErr string

func (e linkErr) Error() string        { return string(e) }
func (e linkErr) Is(target error) bool { return target == ErrLink }

// OpenInPlace opens the existing regular file path to write it in place,
// with flag (os.O_WRONLY or os.O_RDWR, with os.O_APPEND or not; never
// os.O_CREATE or os.O_TRUNC: truncate it once it is known good). It refuses a
// symbolic link, a file that is not regular, and a file with another name.
func OpenInPlace(path string, flag int) (*os.File, error) {
	if noFollow == 0 { // no O_NOFOLLOW here: look first
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, linkError(path)
		}
	}
	f, err := os.OpenFile(path, flag|noFollow, 0)
	if err != nil {
		if isLoop(err) {
			return nil, linkError(path)
		}
		return nil, err
	}
	if err := checkInPlace(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CreateInPlace opens path to write it in place, as OpenInPlace does, or
// creates it (with perm, before the umask) when it does not exist; created
// says which.
func CreateInPlace(path string, flag int, perm fs.FileMode) (f *os.File, created bool, err error) {
	for range 8 { // the file may come and go between the two opens
		f, err = os.OpenFile(path, flag|os.O_CREATE|os.O_EXCL|noFollow, perm)
		if err == nil {
			return f, true, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
		f, err = OpenInPlace(path, flag)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, false, err
		}
	}
	return nil, false, err
}

// checkInPlace refuses an opened file that is not a regular file with one
// name.
func checkInPlace(f *os.File, path string) error {
	fi, err := f.Stat()
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is %s, not a regular file: refusing to write into it", path, Kind(fi.Mode()))
	}
	if n := links(fi); n > 1 {
		return linkErr(fmt.Sprintf("%s has %d names (hard links): writing it in place would change the file under its other names too (remove this name, or name another file)", path, n))
	}
	return nil
}

func linkError(path string) error {
	to := ""
	if target, err := os.Readlink(path); err == nil {
		to = " to " + target
	}
	return linkErr(fmt.Sprintf("%s is a symbolic link%s: refusing to write through it into the file it names (remove the link, or name another file)", path, to))
}

// isLoop reports an open refused because O_NOFOLLOW met a symbolic link.
func isLoop(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
