package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// InUse returns, when another process holds the folder's lock (a run
// writing its checkpoints there), the error Claim would refuse the folder
// with, naming the process and its run; nil otherwise. It makes no file
// and follows no link: a folder without a lock file, or with a link at
// its name, is not in use (Claim refuses the link itself). To learn it, it
// takes the lock for an instant and lets it go at once, so a Claim at that
// very instant would find the folder in use: callers (hetsgd launch, before
// it starts a job on the folder) ask when none of theirs is starting.
func (d Dir) InUse() error {
	path := filepath.Join(string(d), lockFile)
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close() // ends a lock this took
	if err := lockFileNB(f); errors.Is(err, errLocked) {
		return d.inUse(f)
	}
	return nil
}
