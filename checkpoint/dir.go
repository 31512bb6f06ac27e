package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
)

// Dir is a folder of one run's checkpoints, each named by the samples the
// run had processed when it was written (checkpoint-000000012345.hck), so
// that names sort oldest first.
type Dir string

const (
	prefix = "checkpoint-"
	suffix = ".hck"
)

// Path returns the name of the checkpoint after samples.
func (d Dir) Path(samples int64) string {
	return filepath.Join(string(d), fmt.Sprintf("%s%012d%s", prefix, samples, suffix))
}

// bestName is the file of the folder's best model (engine's KeepBest).
const bestName = "best.hck"

// Best returns the name of the folder's best model: the model of the
// run's best evaluation so far, kept beside its checkpoints.
func (d Dir) Best() string { return filepath.Join(string(d), bestName) }

// Make creates the folder if it does not exist.
func (d Dir) Make() error {
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// List returns the folder's checkpoints, oldest first.
func (d Dir) List() ([]string, error) {
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []string
	for _, e := range entries {
		if _, ok := samplesOf(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, filepath.Join(string(d), e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

func samplesOf(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, suffix)
	if !ok || len(s) != 12 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// Prune removes all but the keep newest checkpoints, and the temporary
// files of writers that died (a process killed while it wrote one).
func (d Dir) Prune(keep int) error {
	list, err := d.List()
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range list[:max(0, len(list)-keep)] {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("checkpoint: %w", err))
		}
	}
	atomicfile.RemoveStaleIn(string(d))
	return errors.Join(errs...)
}

// Latest returns the newest checkpoint of path: path itself when it is a
// file, else the newest checkpoint in the folder path.
func Latest(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if !fi.IsDir() {
		return path, nil
	}
	list, err := Dir(path).List()
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("checkpoint: %s holds no checkpoint (files named %s…%s)", path, prefix, suffix)
	}
	return list[len(list)-1], nil
}

// Previous returns the checkpoint of the same folder written before file
// ("" when there is none), for messages about a damaged one.
func Previous(file string) string {
	list, err := Dir(filepath.Dir(file)).List()
	if err != nil {
		return ""
	}
	i := slices.Index(list, filepath.Clean(file))
	if i <= 0 {
		return ""
	}
	return list[i-1]
}

// Reserved reports whether name is one of the names a checkpoint folder
// uses for its own files — a checkpoint, its temporary file, the run's
// record and lock — which no other file in the folder may have.
func Reserved(name string) bool {
	_, isCheckpoint := samplesOf(name)
	return isCheckpoint || name == ownerFile || name == lockFile || name == bestName ||
		strings.HasPrefix(name, "."+prefix) || strings.HasPrefix(name, "."+ownerFile) || strings.HasPrefix(name, "."+bestName)
}
