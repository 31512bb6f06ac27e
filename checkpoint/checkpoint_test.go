package checkpoint

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func write(t testing.TB, path string, vec []float32) {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Bytes("settings", []byte(`{"strategy":"sync"}`))
	w.Float32s("center", vec)
	w.Bytes("empty", nil)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func vector(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)*0.5 - 3
	}
	v[1], v[2] = float32(math.NaN()), float32(math.Inf(-1))
	return v
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.hck")
	vec := vector(3*chunk + 17) // several chunks and a partial one
	write(t, path, vec)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Names(); !slices.Equal(got, []string{"settings", "center", "empty"}) {
		t.Fatalf("names %v", got)
	}
	b, err := r.Bytes("settings")
	if err != nil || string(b) != `{"strategy":"sync"}` {
		t.Fatalf("settings %q, %v", b, err)
	}
	if b, err := r.Bytes("empty"); err != nil || len(b) != 0 {
		t.Fatalf("empty %q, %v", b, err)
	}
	n, err := r.Len("center")
	if err != nil || n != len(vec) {
		t.Fatalf("len %d, %v", n, err)
	}
	got := make([]float32, n)
	if err := r.Float32s("center", got); err != nil {
		t.Fatal(err)
	}
	for i := range vec {
		if math.Float32bits(got[i]) != math.Float32bits(vec[i]) {
			t.Fatalf("value %d: %v, want %v", i, got[i], vec[i])
		}
	}
	if err := r.Float32s("center", got[:5]); err == nil || !strings.Contains(err.Error(), "holds") {
		t.Errorf("a short destination: %v", err)
	}
	if _, err := r.Bytes("center"); err == nil {
		t.Error("a vector read as bytes: no error")
	}
	if _, err := r.Bytes("nothing"); err == nil || !strings.Contains(err.Error(), `no section "nothing"`) {
		t.Errorf("a missing section: %v", err)
	}
}

// Every damage is refused with an error naming the file: a flipped bit
// anywhere, a file cut anywhere, another version, not a checkpoint.
func TestDamageIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.hck")
	write(t, path, vector(100))
	good, _ := os.ReadFile(path)
	bad := filepath.Join(dir, "bad.hck")
	try := func(what string, b []byte, want string) {
		t.Helper()
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(bad)
		if err == nil {
			r.Close()
			t.Fatalf("%s: opened without an error", what)
		}
		if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %q, want the file's name and %q", what, err, want)
		}
	}
	for i := 0; i < len(good); i += 7 {
		b := slices.Clone(good)
		b[i] ^= 0x10
		try("bit flipped at byte "+itoa(i), b, "")
	}
	for _, n := range []int{0, 5, headerLen, headerLen + 3, len(good) / 2, len(good) - footerLen, len(good) - 1} {
		try("cut at "+itoa(n), good[:n], "")
	}
	b := slices.Clone(good)
	b[8] = 2
	try("version 2", b, "version 2")
	try("text", []byte(strings.Repeat("not a checkpoint\n", 10)), "does not start")
	flipped := slices.Clone(good)
	flipped[40] ^= 1
	os.WriteFile(bad, flipped, 0o644)
	if _, err := Open(bad); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a flipped payload bit: %v, want ErrCorrupt naming the checksum", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestWriterRefusesDuplicateSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.hck")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Bytes("a", nil)
	w.Bytes("a", nil)
	if err := w.Commit(); err == nil {
		t.Fatal("two sections named a: no error")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a failed checkpoint left %s behind (%v)", path, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 0 {
		t.Fatalf("a failed checkpoint left %v behind", entries)
	}
}

func TestDirKeepsNewest(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "run"))
	if err := d.Make(); err != nil {
		t.Fatal(err)
	}
	if _, err := Latest(string(d)); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Fatalf("an empty folder: %v", err)
	}
	for _, s := range []int64{10, 200, 3000, 40000} {
		write(t, d.Path(s), vector(4))
		if err := d.Prune(2); err != nil {
			t.Fatal(err)
		}
	}
	// A writer killed part-way leaves a temporary file; a dead process's is
	// removed by the next prune.
	stale := filepath.Join(string(d), ".checkpoint-000000050000.hck.tmp-999999999.123.tmp")
	os.WriteFile(stale, []byte("half"), 0o644)
	os.WriteFile(filepath.Join(string(d), "notes.txt"), nil, 0o644)
	if err := d.Prune(2); err != nil {
		t.Fatal(err)
	}
	list, err := d.List()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{d.Path(3000), d.Path(40000)}
	if !slices.Equal(list, want) {
		t.Fatalf("kept %v, want %v", list, want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead writer's temporary file is still there")
	}
	if got, err := Latest(string(d)); err != nil || got != d.Path(40000) {
		t.Errorf("Latest = %q, %v", got, err)
	}
	if got, err := Latest(d.Path(3000)); err != nil || got != d.Path(3000) {
		t.Errorf("Latest of a file = %q, %v", got, err)
	}
	if got := Previous(d.Path(40000)); got != d.Path(3000) {
		t.Errorf("Previous = %q", got)
	}
	if got := Previous(d.Path(3000)); got != "" {
		t.Errorf("Previous of the oldest = %q", got)
	}
}

// FuzzOpen: no input makes Open panic or read a section past the end. The
// footer's checksum is made to match what the fuzzer wrote, so that the
// section parser behind it is what gets fuzzed.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.hck")
	write(f, path, vector(10))
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= headerLen+footerLen {
			b = slices.Clone(b)
			body := len(b) - footerLen
			binary.LittleEndian.PutUint32(b[body+8:], crc32.Checksum(b[:body], castagnoli))
			copy(b[body+12:], endMagic)
		}
		p := filepath.Join(t.TempDir(), "f.hck")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p)
		if err != nil {
			return
		}
		defer r.Close()
		for _, name := range r.Names() {
			if n, err := r.Len(name); err == nil {
				r.Float32s(name, make([]float32, n))
			} else {
				r.Bytes(name)
			}
		}
	})
}

// FiniteFloat32s refuses a vector holding a NaN or an infinity, naming the
// file, the section and the position; Float32s reads it bit for bit.
func TestFiniteFloat32s(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.hck")
	vec := vector(10) // a NaN at 1
	write(t, path, vec)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]float32, len(vec))
	err = r.FiniteFloat32s("center", got)
	if !errors.Is(err, ErrNotFinite) || !strings.Contains(err.Error(), `c.hck: section "center" holds NaN at position 1`) {
		t.Fatalf("a NaN: %v", err)
	}
	if err := r.Float32s("center", got); err != nil {
		t.Fatal(err)
	}
}
