package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claim's rules: a new folder is made and recorded; a second claim is
// refused while the first holds the folder, and a new run once the folder
// holds another run's checkpoints; adopt lets a resumed run take them; a
// copy of the folder is told from it; Abandon leaves a folder as found.
func TestClaim(t *testing.T) {
	root := t.TempDir()
	d := Dir(filepath.Join(root, "ck"))
	c, err := d.Claim(Owner{Run: "a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(Owner{Run: "b"}, false); err == nil || !strings.Contains(err.Error(), "is in use by process") || !strings.Contains(err.Error(), "run a") {
		t.Fatalf("a second claim while the first holds: %v", err)
	}
	w, _ := Create(d.Path(10))
	w.Bytes("x", nil)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if _, err := d.Claim(Owner{Run: "b"}, false); err == nil || !strings.Contains(err.Error(), "holds the checkpoints of run a") {
		t.Fatalf("a new run into a run's folder: %v", err)
	}
	c, err = d.Claim(Owner{Run: "a"}, false) // the same run again
	if err != nil {
		t.Fatal(err)
	}
	o, ok, err := d.Owner()
	if err != nil || !ok || o.Run != "a" || o.Copied(d) {
		t.Fatalf("owner %+v, %v, %v", o, ok, err)
	}
	c.Release()
	copyDir := Dir(filepath.Join(root, "copy"))
	os.Mkdir(string(copyDir), 0o777)
	b, _ := os.ReadFile(filepath.Join(string(d), ownerFile))
	os.WriteFile(filepath.Join(string(copyDir), ownerFile), b, 0o644)
	if o, _, _ := copyDir.Owner(); !o.Copied(copyDir) {
		t.Fatal("a copy of a folder taken for the folder")
	}
	c, err = copyDir.Claim(Owner{Run: "fork", From: "a at 10"}, true)
	if err != nil {
		t.Fatal(err)
	}
	c.Abandon() // nothing written: the copy's record as it was
	if after, _ := os.ReadFile(filepath.Join(string(copyDir), ownerFile)); string(after) != string(b) {
		t.Fatalf("Abandon changed the record: %s", after)
	}
	fresh := Dir(filepath.Join(root, "fresh"))
	c, err = fresh.Claim(Owner{Run: "c"}, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Abandon()
	if _, err := os.Stat(string(fresh)); err == nil {
		t.Fatal("Abandon left the folder it made")
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Dir(file).Claim(Owner{Run: "d"}, false); err == nil || !strings.Contains(err.Error(), "is a file, not a folder") {
		t.Fatalf("a file: %v", err)
	}
	os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(root, "dangling"))
	if _, err := Dir(filepath.Join(root, "dangling")).Claim(Owner{Run: "d"}, false); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a dangling link: %v", err)
	}
}

// A folder's record of its run, whatever its bytes, reads as a record or
// as an error naming it: never a panic.
func FuzzOwner(f *testing.F) {
	f.Add([]byte(`{"run":"a","created":"2026-11-26T09:13:20Z","folder":{"dev":1,"ino":2}}`))
	f.Add([]byte(`{"run":""}`))
	f.Add([]byte("not json"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Dir(t.TempDir())
		if err := os.WriteFile(filepath.Join(string(d), ownerFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		o, ok, err := d.Owner()
		if ok && (err != nil || o.Run == "") {
			t.Fatalf("a record without a run: %+v, %v", o, err)
		}
		if !ok && err == nil {
			t.Fatal("a file that is there read as no record, without an error")
		}
		o.Copied(d)
		o.Describe()
	})
}
