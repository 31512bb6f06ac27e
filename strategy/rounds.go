package strategy

import "fmt"

// Rounds is the round of the local-step strategies (elastic averaging,
// DiLoCo): every device in the run takes K local steps, each a batch of B
// at rate LR, from the model the last round left; once every one has, the
// round ends with the strategy's collective over the replicas, weighted 1/live
// each and recorded as a merge (batch, rate and steps of every device); the
// collective's completion starts the next round. A device that leaves is
// waited for no more — the round ends once the others have taken their
// steps — and gets weight 0 from then on. Its state is what the strategy
// snapshots (MarshalBinary).
type Rounds struct {
	name     string
	n, b, k  int
	lr       float64
	steps    []int
	done     int  // devices in the run that took their K steps
	round    bool // a round is under way: its collective is not yet asked for
	weights  []float64
	members  Members
	collectv func(weights []float64) Action
}

// NewRounds returns the rounds of strategy name on n devices, K steps of
// batch b at rate lr each; collective makes the action that ends a round
// from the devices' weights (valid until the next Step).
func NewRounds(name string, n, b, k int, lr float64, collective func(weights []float64) Action) *Rounds {
	return &Rounds{name: name, n: n, b: b, k: k, lr: lr, steps: make([]int, n), weights: Uniform(n), members: NewMembers(n), collectv: collective}
}

// Step implements Strategy.
func (r *Rounds) Step(ev Event, out []Action) []Action {
	switch ev.Kind {
	case Start, CollectiveDone:
		clear(r.steps)
		r.done, r.round = 0, true
		return r.members.Dispatch(out, r.b, r.lr, LocalStep)
	case BatchDone:
		d := ev.Device
		if !r.members.In(d) {
			panic(fmt.Sprintf("%s: BatchDone from device %d, which is not in the run", r.name, d))
		}
		if r.steps[d]++; r.steps[d] < r.k {
			return append(out, Action{Kind: Dispatch, Device: d, Batch: r.b, LR: r.lr})
		}
		r.done++
		return r.end(out)
	case Leave:
		d := ev.Device
		if !r.members.Leave(d) {
			return out // already gone, or no device
		}
		// A new slice: the records already written keep their weights.
		r.weights = r.members.Uniform(make([]float64, r.n))
		if r.steps[d] >= r.k {
			r.done-- // its replica, done or not, is not averaged
		}
		return r.end(out)
	}
	return out
}

// end asks for the round's collective once every device in the run took
// its K steps.
func (r *Rounds) end(out []Action) []Action {
	if !r.round || r.done < r.members.Live() {
		return out
	}
	r.round = false
	bs, lrs, updates := make([]int, r.n), make([]float64, r.n), make([]int, r.n)
	for i := range bs {
		if r.members.In(i) {
			bs[i], lrs[i], updates[i] = r.b, r.lr, r.k
		}
	}
	a := r.collectv(r.weights)
	a.Record = &MergeRecord{BatchSizes: bs, LRs: lrs, Updates: updates, Weights: r.weights}
	return append(out, a)
}

// roundsState is a Rounds' snapshot.
type roundsState struct {
	Steps   []int
	Done    int
	Round   bool
	Weights []float64
	Members Members
}

// MarshalBinary implements Strategy.
func (r *Rounds) MarshalBinary() ([]byte, error) {
	return EncodeState(roundsState{Steps: r.steps, Done: r.done, Round: r.round, Weights: r.weights, Members: r.members})
}

// UnmarshalBinary implements Strategy.
func (r *Rounds) UnmarshalBinary(b []byte) error {
	var st roundsState
	if err := DecodeState(b, &st); err != nil {
		return err
	}
	if err := CheckLens(r.n,
		Len{What: "steps", N: len(st.Steps)},
		Len{What: "weights", N: len(st.Weights)},
		Len{What: "members", N: st.Members.Devices()},
	); err != nil {
		return err
	}
	r.steps, r.done, r.round, r.weights, r.members = st.Steps, st.Done, st.Round, st.Weights, st.Members
	return nil
}
