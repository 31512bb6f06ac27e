package engine

import (
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
)

// A command off the wire decodes without panicking, whatever its bytes,
// and one that decodes encodes to bytes that decode to it again: what rank
// 0 sends is what a rank carries out (an op's name and parameters, weights,
// batches).
func FuzzCommand(f *testing.F) {
	const devices, perRank = 4, 2
	buf := make([]byte, cmdSize(devices, perRank))
	act := strategy.Merge([]float64{0.25, 0.25, 0.5, 0}, 0.9)
	for _, c := range []command{
		{kind: cmdDispatch, w: work{dev: 3, pos: 1 << 40, rows: 128, lr: 0.01, mode: strategy.Pull}},
		{kind: cmdAllReduce, lr: 0.5, weights: []float64{0.25, 0.25, 0.25, 0.25}, layered: true,
			next: []work{{dev: 0, pos: 64, rows: 32, lr: 0.5, mode: strategy.Gradient}}},
		opCommand(cmdCollective, &act),
		{kind: cmdCommit, w: work{dev: 1}, op: "gem", lr: 0.3, tau: 7, params: [strategy.MaxParams]float64{0.9, 1, 1e-12, 5}},
		{kind: cmdStop},
	} {
		f.Add(append([]byte(nil), c.encode(buf)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c command
		if err := c.decode(b); err != nil {
			return
		}
		if len(c.weights) > devices || len(c.next) > perRank || len(c.op) > strategy.MaxOpName {
			return // not a command of this job's size: encode's buffer would not hold it
		}
		var again command
		if err := again.decode(c.encode(make([]byte, cmdSize(devices, perRank)))); err != nil || !sameCommand(again, c) {
			t.Fatalf("%x decodes to %+v, which encodes to a command that decodes to %+v (%v)", b, c, again, err)
		}
	})
}

// sameCommand compares two commands' fields, bit for bit where they are
// numbers (NaN payloads included: they travel as they are).
func sameCommand(a, b command) bool {
	bits := math.Float64bits
	sameWork := func(x, y work) bool {
		return x.dev == y.dev && x.pos == y.pos && x.rows == y.rows && bits(x.lr) == bits(y.lr) && x.mode == y.mode
	}
	if a.kind != b.kind || !sameWork(a.w, b.w) || a.layered != b.layered || bits(a.lr) != bits(b.lr) ||
		a.op != b.op || a.tau != b.tau || len(a.weights) != len(b.weights) || len(a.next) != len(b.next) {
		return false
	}
	for i := range a.params {
		if bits(a.params[i]) != bits(b.params[i]) {
			return false
		}
	}
	for i := range a.weights {
		if bits(a.weights[i]) != bits(b.weights[i]) {
			return false
		}
	}
	for i := range a.next {
		if !sameWork(a.next[i], b.next[i]) {
			return false
		}
	}
	return true
}
