package strategytest

import "github.com/hetsgd/hetsgd/strategy"

var _ strategy.Host = (*Host)(nil)

// Host is a strategy.Host of one rank in memory, for the known-answer tests
// of ops: the test sets its replicas and centre vectors, runs an op on it,
// and reads them back.
type Host struct {
	Reps []*Replica
	// C, P and S are the centre, the previous centre and the scratch
	// vector (S is allocated when nil); CS the centre's op state and Pend
	// the vector for reductions in flight (allocated at their first use).
	C, P, S, CS, Pend []float32
	RunSeed           uint64
	list              []strategy.Replica
}

// Replica is a device of a Host. Its optimizer is plain SGD.
type Replica struct {
	Dev      int
	P, G, St []float32
}

func (r *Replica) ID() int           { return r.Dev }
func (r *Replica) Params() []float32 { return r.P }
func (r *Replica) Grad() []float32   { return r.G }

func (r *Replica) State() []float32 {
	if r.St == nil {
		r.St = make([]float32, len(r.P))
	}
	return r.St
}

func (r *Replica) Step(g []float32, lr float32) {
	for i := range r.P {
		r.P[i] -= lr * g[i]
	}
}

func (h *Host) Rank() int  { return 0 }
func (h *Host) Ranks() int { return 1 }
func (h *Host) Live() int  { return len(h.Reps) }

func (h *Host) Replicas() []strategy.Replica {
	h.list = h.list[:0]
	for _, r := range h.Reps {
		h.list = append(h.list, r)
	}
	return h.list
}

func (h *Host) Center() []float32 { return h.C }
func (h *Host) Prev() []float32   { return h.P }

func (h *Host) Scratch() []float32 {
	if h.S == nil {
		h.S = make([]float32, len(h.C))
	}
	return h.S
}

func (h *Host) Advance() { h.P, h.C, h.S = h.C, h.Scratch(), h.P }

func (h *Host) CenterState() []float32 {
	if h.CS == nil {
		h.CS = make([]float32, len(h.C))
	}
	return h.CS
}

func (h *Host) AllReduce([]float32) error { return nil }

// IAllReduce over one rank is done at once.
func (h *Host) IAllReduce([]float32) (strategy.Work, error) { return strategy.Done, nil }

func (h *Host) Pending() []float32 {
	if h.Pend == nil {
		h.Pend = make([]float32, len(h.C))
	}
	return h.Pend
}

func (h *Host) WeightedAllReduce(out []float32, w []float32, vecs [][]float32) error {
	clear(out)
	for k, v := range vecs {
		for i := range out {
			out[i] += w[k] * v[i]
		}
	}
	return nil
}

func (h *Host) Seed() uint64 { return h.RunSeed }
