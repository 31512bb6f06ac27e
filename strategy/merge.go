package strategy

import "fmt"

// MergeOp is the stock op of model averaging (elastic averaging, Adaptive
// SGD, and every strategy whose centre follows a lone replica): a
// Collective that averages the replicas into the centre, with momentum
// γ = Params[0],
//
//	w̄' = Σ Weights[i]·w_i + γ·(w̄ − w̄_prev);  w̄_prev ← w̄;  w̄ ← w̄'
//
// and restarts every replica from w̄'.
const MergeOp = "merge"

// Merge returns a Collective of MergeOp.
func Merge(weights []float64, gamma float64) Action {
	a := Action{Kind: Collective, Op: MergeOp, Weights: weights}
	a.Params[0] = gamma
	return a
}

// IdentityMerge returns the merge of a single replica into the centre
// (weight 1, no momentum): the centre becomes the replica as it is. One-device
// runs of model-averaging strategies take it where n > 1 would merge, so that
// the engine's barriers and evaluation points stay where they are. Its
// Weights are shared and must not be written.
func IdentityMerge() Action { return Merge(identityWeights, 0) }

var identityWeights = []float64{1}

func init() { RegisterOp(MergeOp, func() Op { return &merge{} }) }

// merge is MergeOp on one rank: the γ terms are counted once, on rank 0,
// and the whole sum is one weighted all-reduce.
type merge struct {
	w    []float32
	vecs [][]float32
}

func (*merge) Format(a *Action) string {
	return fmt.Sprintf("merge weights=%s gamma=%s", Gs(a.Weights), G(a.Params[0]))
}

func (*merge) Cost(*Action) Cost { return Cost{AllReduces: 1, Passes: 3} }

func (*merge) Check(a *Action, n int) error {
	if g := a.Params[0]; !(g >= 0 && g < 1) {
		return fmt.Errorf("momentum %v, want [0, 1)", g)
	}
	if len(a.Weights) != n {
		return fmt.Errorf("%d weights for %d devices", len(a.Weights), n)
	}
	return nil
}

func (m *merge) Collect(h Host, a *Action) error {
	center := h.Center()
	if center == nil {
		return nil
	}
	gamma := a.Params[0]
	m.w, m.vecs = m.w[:0], m.vecs[:0]
	if h.Rank() == 0 {
		m.w = append(m.w, float32(gamma), float32(-gamma))
		m.vecs = append(m.vecs, center, h.Prev())
	}
	for _, r := range h.Replicas() {
		m.w = append(m.w, float32(a.Weights[r.ID()]))
		m.vecs = append(m.vecs, r.Params())
	}
	if err := h.WeightedAllReduce(h.Scratch(), m.w, m.vecs); err != nil {
		return fmt.Errorf("merging the replicas: %w", err)
	}
	h.Advance()
	center = h.Center()
	for _, r := range h.Replicas() {
		copy(r.Params(), center)
	}
	return nil
}
