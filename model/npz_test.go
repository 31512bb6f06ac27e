package model

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/internal/testdata"
	"github.com/hetsgd/hetsgd/sparse"
)

func exported(t testing.TB, cfg Config) ([]float32, []byte) {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, m.NumParams())
	m.Init(p, 5)
	// Every finite bit pattern survives: the largest, a subnormal, −0.
	p[0], p[1], p[2] = math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1))
	var b bytes.Buffer
	if err := WriteNPZ(&b, cfg, p); err != nil {
		t.Fatal(err)
	}
	return p, b.Bytes()
}

func TestNPZRoundTrip(t *testing.T) {
	for _, cfg := range []Config{{Inputs: 7, Hidden: []int{5, 3}, Outputs: 4}, {Inputs: 9, Outputs: 2}, {Inputs: 20000, Hidden: []int{8}, Outputs: 3}} {
		p, b := exported(t, cfg)
		got, q, err := ReadNPZ(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		if card, err := ReadNPZCard(bytes.NewReader(b), int64(len(b))); card != nil || err != nil {
			t.Fatalf("an archive without a card: card %q, %v", card, err)
		}
		if got.Inputs != cfg.Inputs || got.Outputs != cfg.Outputs || !slices.Equal(got.Hidden, cfg.Hidden) {
			t.Fatalf("config %+v, want %+v", got, cfg)
		}
		for i := range p {
			if math.Float32bits(p[i]) != math.Float32bits(q[i]) {
				t.Fatalf("%+v: parameter %d: %v, want %v", cfg, i, q[i], p[i])
			}
		}
	}
}

func TestNPZRefusesOthers(t *testing.T) {
	cfg := Config{Inputs: 7, Hidden: []int{5}, Outputs: 4}
	_, b := exported(t, cfg)
	m, _ := New(cfg)
	p := make([]float32, m.NumParams())
	p[len(p)-1] = float32(math.NaN()) // a bias
	var nan bytes.Buffer
	if err := WriteNPZ(&nan, cfg, p); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{[]byte("not a zip"), "not an .npz"},
		{b[:len(b)/2], "not an .npz"},
		{nan.Bytes(), "b1.npy holds NaN at position 3"},
	} {
		if _, _, err := ReadNPZ(bytes.NewReader(c.b), int64(len(c.b))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// NumPy reads the archive, and the network written in the package
// documentation's terms gives the scores Forward gives: what the Python
// example of docs/checkpoints.md relies on.
func TestNPZInNumPy(t *testing.T) {
	py := testdata.NumPy(t)
	cfg := Config{Inputs: 11, Hidden: []int{6, 5}, Outputs: 4}
	m, _ := New(cfg)
	p := make([]float32, m.NumParams())
	m.Init(p, 9)
	var b bytes.Buffer
	card := []byte(`{"hetsgd": "dev", "scored": {"p1": 0.625, "epoch": 3}, "note": "ünïcode"}`)
	if err := WriteNPZCard(&b, cfg, p, card); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadNPZCard(bytes.NewReader(b.Bytes()), int64(b.Len())); err != nil || !bytes.Equal(got, card) {
		t.Fatalf("the card read back: %q, %v", got, err)
	}
	path := filepath.Join(t.TempDir(), "model.npz")
	os.WriteFile(path, b.Bytes(), 0o644)
	// Two points: features {1: 0.5, 7: 2} and {0: 1}.
	bd := sparse.NewBuilder(cfg.Inputs, false, 2, 3)
	bd.Append(1, 0.5)
	bd.Append(7, 2)
	bd.EndRow()
	bd.Append(0, 1)
	bd.EndRow()
	x := bd.Build()
	ws := m.NewWorkspace(2)
	ws.Forward(p, &x)
	want := ws.Logits()
	script := `
import json, numpy as np, sys
m = np.load(sys.argv[1])
card = json.loads(m["card"].tobytes())
assert card["scored"]["p1"] == 0.625 and card["note"] == "ünïcode", card
shape = m["shape"]
x = np.zeros((2, shape[0]), dtype=np.float32)
x[0, 1], x[0, 7], x[1, 0] = 0.5, 2, 1
h = x
n = len(shape) - 1
for i in range(n):
    h = h @ m[f"w{i}"] + m[f"b{i}"]
    if i < n - 1:
        h = np.maximum(h, 0)
print(" ".join(repr(float(v)) for v in h.ravel()))
`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) != len(want) {
		t.Fatalf("numpy gave %d scores, want %d: %s", len(fields), len(want), out)
	}
	for i, f := range fields {
		v, _ := strconv.ParseFloat(f, 64)
		if math.Abs(v-float64(want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("score %d: numpy %v, Forward %v", i, v, want[i])
		}
	}
}

// FuzzReadNPZ: no archive makes ReadNPZ panic or allocate for widths its
// arrays do not hold.
func FuzzReadNPZ(f *testing.F) {
	_, b := exported(f, Config{Inputs: 7, Hidden: []int{5}, Outputs: 4})
	f.Add(b)
	f.Add(b[:len(b)-30])
	r := rand.New(rand.NewPCG(1, 1))
	for range 4 {
		c := slices.Clone(b)
		c[r.IntN(len(c))] ^= 0x20
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadNPZ(bytes.NewReader(b), int64(len(b)))
	})
}

// A label-major model exports the usual (In, Out) output layer: it reads
// back as the same network in the usual layout, with the same logits.
func TestNPZLabelMajor(t *testing.T) {
	cfg := Config{Inputs: 12, Hidden: []int{6}, Outputs: 5, LabelMajor: true}
	p, _ := exported(t, cfg)
	p[0] = 0.5 // the logits below must stay finite
	var buf bytes.Buffer
	if err := WriteNPZ(&buf, cfg, p); err != nil {
		t.Fatal(err)
	}
	got, q, err := ReadNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || got.LabelMajor {
		t.Fatalf("read back %+v, %v", got, err)
	}
	lm, _ := New(cfg)
	plain, _ := New(got)
	x, _ := randBatch(rand.New(rand.NewPCG(1, 1)), 4, 12, 5, 3)
	a, c := lm.NewWorkspace(4), plain.NewWorkspace(4)
	a.Forward(p, x)
	c.Forward(q, x)
	for i, v := range a.Logits() {
		if d := math.Abs(float64(v - c.Logits()[i])); d > 1e-5 {
			t.Fatalf("logit %d: %v label-major, %v read back", i, v, c.Logits()[i])
		}
	}
}

// An archive's model is sized against the memory before it is allocated:
// a compressed archive may claim far more than it holds.
func TestNPZChecksMemory(t *testing.T) {
	cfg := Config{Inputs: 20000, Hidden: []int{64}, Outputs: 3} // 1.3M parameters, 5 MB
	_, b := exported(t, cfg)
	t.Setenv(memory.EnvLimit, "1M")
	if _, _, err := ReadNPZ(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), "needs an estimated") {
		t.Fatalf("a model over the memory limit: %v", err)
	}
}
