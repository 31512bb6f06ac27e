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

// A claim writes its lock file in place, so a link planted at the lock's
// name, or at a name of the folder's own files, is refused before any
// work, and the file a link names is left as it was; a claim refused, or
// given up, leaves no lock file behind; a run abandoned before its first
// checkpoint takes back the best model it kept.
func TestClaimLinksAndLeftovers(t *testing.T) {
	root := t.TempDir()
	mine := filepath.Join(root, "mine.txt")
	os.WriteFile(mine, []byte("the user's"), 0o644)
	for _, c := range []struct {
		name  string
		plant func(dir string) error
		want  string
	}{
		{"a symbolic link as the lock", func(dir string) error { return os.Symlink(mine, filepath.Join(dir, lockFile)) }, "is a symbolic link to " + mine},
		{"a dangling link as the lock", func(dir string) error {
			return os.Symlink(filepath.Join(root, "made-by-no-one"), filepath.Join(dir, lockFile))
		}, "is a symbolic link"},
		{"a hard link as the lock", func(dir string) error { return os.Link(mine, filepath.Join(dir, lockFile)) }, "has 2 names"},
		{"a link as the best model", func(dir string) error { return os.Symlink(mine, filepath.Join(dir, bestName)) }, "best.hck is a symbolic link to " + mine},
		{"a link as a checkpoint", func(dir string) error { return os.Symlink(mine, Dir(dir).Path(5)) }, "checkpoint-000000000005.hck is a symbolic link"},
		{"a link as the record", func(dir string) error { return os.Symlink(mine, filepath.Join(dir, ownerFile)) }, "run.json is a symbolic link"},
	} {
		dir := filepath.Join(root, strings.ReplaceAll(c.name, " ", "-"))
		os.Mkdir(dir, 0o777)
		if err := c.plant(dir); err != nil {
			t.Fatal(err)
		}
		_, err := Dir(dir).Claim(Owner{Run: "a"}, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if b, _ := os.ReadFile(mine); string(b) != "the user's" {
			t.Fatalf("%s: the linked file now holds %q", c.name, b)
		}
		if _, err := os.Stat(filepath.Join(root, "made-by-no-one")); err == nil {
			t.Fatalf("%s: a dangling link's target was made", c.name)
		}
		if _, err := os.Stat(filepath.Join(dir, ownerFile)); err == nil && c.name != "a link as the record" {
			t.Errorf("%s: the refused claim left its record", c.name)
		}
		os.Remove(filepath.Join(dir, lockFile))
		os.Remove(filepath.Join(dir, ownerFile))
	}

	// Refused: another run's checkpoints. No lock file is left.
	d := Dir(filepath.Join(root, "ck"))
	c, err := d.Claim(Owner{Run: "a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := Create(d.Path(10))
	w.Bytes("x", nil)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if _, err := os.Lstat(filepath.Join(string(d), lockFile)); err == nil {
		t.Error("Release left the lock file")
	}
	if _, err := d.Claim(Owner{Run: "b"}, false); err == nil {
		t.Fatal("a new run claimed another run's folder")
	}
	if _, err := os.Lstat(filepath.Join(string(d), lockFile)); err == nil {
		t.Error("a refused claim left a lock file")
	}

	// Abandoned before the first checkpoint: the best model it kept goes.
	fresh := Dir(filepath.Join(root, "fresh"))
	os.Mkdir(string(fresh), 0o777)
	c, err = fresh.Claim(Owner{Run: "c"}, false)
	if err != nil {
		t.Fatal(err)
	}
	w, _ = Create(fresh.Best())
	w.Bytes("x", nil)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Abandon()
	if entries, _ := os.ReadDir(string(fresh)); len(entries) != 0 {
		t.Errorf("an abandoned run left %v", entries)
	}
}

// Attach writes a file beside the checkpoints, keeps one with the same
// bytes, refuses one with others, and Abandon takes back what it wrote
// (the folder it made included); after a checkpoint the file stays.
func TestClaimAttach(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "ck"))
	c, err := d.Claim(Owner{Run: "a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Attach("vec.json", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Attach("vec.json", []byte("v1")); err != nil {
		t.Fatalf("the same bytes again: %v", err)
	}
	if err := c.Attach("vec.json", []byte("v2")); err == nil || !strings.Contains(err.Error(), "vec.json is another run's") {
		t.Fatalf("other bytes: %v", err)
	}
	c.Abandon()
	if _, err := os.Stat(string(d)); err == nil {
		t.Fatal("Abandon left the folder it made, or the file it attached")
	}
	c, err = d.Claim(Owner{Run: "a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Attach("vec.json", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	w, _ := Create(d.Path(10))
	w.Bytes("x", nil)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Abandon()
	if b, err := os.ReadFile(filepath.Join(string(d), "vec.json")); string(b) != "v1" {
		t.Fatalf("after a checkpoint, Abandon took the attached file: %q %v", b, err)
	}
}
