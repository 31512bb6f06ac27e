package checkpoint

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A folder is in use while a claim holds it (here this process's: flock
// tells one open file from another), with Claim's own refusal; not before,
// not after, and asking makes no file.
func TestInUse(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "ck"))
	if err := d.InUse(); err != nil {
		t.Fatalf("a folder that does not exist: %v", err)
	}
	c, err := d.Claim(Owner{Run: NewRunID()}, false)
	if err != nil {
		t.Fatal(err)
	}
	err = d.InUse()
	if err == nil || !strings.Contains(err.Error(), "in use by process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("a claimed folder: %v", err)
	}
	if _, cerr := d.Claim(Owner{Run: NewRunID()}, false); cerr == nil || cerr.Error() != err.Error() {
		t.Errorf("InUse says %v, Claim %v", err, cerr)
	}
	c.Release()
	if err := d.InUse(); err != nil {
		t.Fatalf("a released folder: %v", err)
	}
	c, err = d.Claim(Owner{Run: NewRunID()}, false)
	if err != nil {
		t.Fatalf("claimed after InUse: %v", err)
	}
	c.Release()
}
