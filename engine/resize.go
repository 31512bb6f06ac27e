package engine

import (
	"fmt"
	"math"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/setting"
)

// A run resumed on another number of devices — fewer after a machine was
// lost, more when one came back — goes on from its model, by one rule for
// every strategy:
//
//   - Every device starts from the model the run evaluates: replica 0 for
//     the strategies that evaluate it (their replicas are equal: exact),
//     the centre for the others (the replicas merge into it, or it is a
//     parameter server's θ). The centre, the previous centre and the ops'
//     vector beside it (Host.CenterState) are kept, so the global momentum
//     (w̄ − w̄_prev) and such state go on.
//   - Every device takes the optimizer state of the checkpoint's first
//     device still in the run (Adam's moments; for the equal-replica
//     strategies every device's state is that one). The ops' per-device
//     vectors (Replica.State) start at zero.
//   - The strategy starts anew on the new devices, at the run's position:
//     its per-device books (batch sizes, pulls) start again as at a run's
//     start, and so do schedules it counts itself (warm-ups).
//   - The run's books go on: the samples done and the data's position, the
//     evaluations, the log, the clock. Batches under way were lost with the
//     devices; every device of the new run is in it (earlier faults are
//     history).
//
// Settings that follow from the devices (their speeds, the strategy's
// derived options, a rate or batch derived from the devices' count) are
// the new run's.
func (r *run) restoreResized(rd *checkpoint.Reader, st *engineState) error {
	old := len(st.Devices)
	if old == 0 || len(st.Gone) != old {
		return fmt.Errorf("engine: checkpoint %s: its books list no devices", rd.Path())
	}
	first := -1 // the first device of the checkpoint still in its run
	for i, gone := range st.Gone {
		if !gone {
			first = i
			break
		}
	}
	if first < 0 {
		return fmt.Errorf("engine: checkpoint %s: no device of its run is left to take up from", rd.Path())
	}
	if err := r.job.restoreResized(rd, st, first); err != nil {
		return err
	}

	r.dispatched, r.done, r.lastEval = st.Done, st.Done, st.LastEval
	r.nextEval = st.NextEval
	if st.EvalStep != r.evalStep {
		r.nextEval = r.lastEval + r.evalStep
	}
	for r.nextEval <= r.done {
		r.nextEval += r.evalStep
	}
	r.nextCheckpoint = math.MaxInt64
	if r.checkpointStep != math.MaxInt64 {
		r.nextCheckpoint = r.done + r.checkpointStep
	}
	r.restoreHistory(st)

	switch c := r.clk.(type) {
	case *virtualClock:
		vs := st.Virtual
		if vs == nil {
			return setting.Errorf("engine", "engine: checkpoint %s is of a real-clock run: resume it with {Config.Clock} real", rd.Path())
		}
		c.t, c.serverFree, c.seq = vs.T, max(vs.ServerFree, vs.T), vs.Seq
		// Of the new run's faults, those still to come.
		q := c.q
		c.q, c.pending = c.q[:0:0], 0
		for _, e := range q {
			if e.t >= vs.T {
				c.q.push(e)
			}
		}
	case *realClock:
		if st.Real == nil {
			return setting.Errorf("engine", "engine: checkpoint %s is of a virtual-clock run: resume it with {Config.Clock} virtual", rd.Path())
		}
		c.resumeAt(st.Now)
		for len(c.faults) > 0 && c.faults[0].At < st.Now {
			c.faults = c.faults[1:]
		}
	}
	r.resumed, r.resized = true, true
	return nil
}
