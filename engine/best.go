package engine

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"
)

// The best evaluation of a run, and what follows from it: the model kept
// (Checkpointing.KeepBest) and the early stop (Config.Patience). A run
// evaluated by P@k is better when its P@1 is higher; a workload without
// P@k (the regression) when its test loss is lower.

// better reports whether evaluation e beats best.
func (r *run) better(e, best runlog.Eval) bool {
	if r.byLoss() {
		return e.Loss < best.Loss
	}
	return e.P1 > best.P1
}

// byLoss reports whether evaluations are compared by their loss: a
// workload without P@k.
func (r *run) byLoss() bool {
	_, ok := r.w.(workload.LossScored)
	return ok
}

// sinceBest returns how many evaluations followed the best one.
func (r *run) sinceBest() int {
	evals := r.res.Evals
	best := 0
	for i := range evals {
		if r.better(evals[i], evals[best]) {
			best = i
		}
	}
	return len(evals) - 1 - best
}

// patienceSpent reports whether the run has waited Config.Patience
// evaluations for a better one.
func (r *run) patienceSpent() bool {
	return r.cfg.Patience > 0 && len(r.res.Evals) > 0 && r.sinceBest() >= r.cfg.Patience
}

// bestEvaluated notes the evaluation just made, the last of r.res.Evals:
// if it is the best so far, its model is kept; if the run has waited long
// enough for a better one, it stops.
func (r *run) bestEvaluated() error {
	if r.sinceBest() == 0 && r.cfg.Checkpoint.KeepBest && r.cfg.Checkpoint.Dir != "" {
		if err := r.saveBest(r.res.Evals[len(r.res.Evals)-1]); err != nil {
			return err
		}
	}
	if r.patienceSpent() {
		r.res.StoppedEarly = true
	}
	return nil
}

// saveBest writes the evaluated model, with the evaluation that scored
// it, into the checkpoint folder's best.hck: a file that predict, eval and
// export read as a model (LoadModel), not a run to continue.
func (r *run) saveBest(e runlog.Eval) error {
	m, ok := r.w.(interface{ MLP() *model.MLP })
	if !ok {
		return nil
	}
	c := m.MLP().Config()
	st := &engineState{Version: stateVersion, Clock: r.cfg.Clock, Done: r.done, Now: r.clk.now(),
		Model: "model", ModelConfig: &c, Evals: []runlog.Eval{e}, BestOnly: true}
	var eng bytes.Buffer
	if err := gob.NewEncoder(&eng).Encode(st); err != nil {
		return fmt.Errorf("engine: encoding the best model: %w", err)
	}
	dir := checkpoint.Dir(r.cfg.Checkpoint.Dir)
	if err := dir.Make(); err != nil {
		return err
	}
	w, err := checkpoint.Create(dir.Best())
	if err != nil {
		return err
	}
	defer w.Abort()
	w.Bytes("settings", r.cfg.Checkpoint.Settings)
	w.Bytes("engine", eng.Bytes())
	w.Float32s("model", r.evaluated())
	return w.Commit()
}

// BestOf reads the evaluation a model file scored (a best.hck, or a
// checkpoint's last evaluation), for messages saying which model is used.
func BestOf(rd *checkpoint.Reader) (runlog.Eval, bool, error) {
	st, err := readState(rd)
	if err != nil {
		return runlog.Eval{}, false, err
	}
	if len(st.Evals) == 0 {
		return runlog.Eval{}, false, nil
	}
	return st.Evals[len(st.Evals)-1], true, nil
}

// ModelShape reads the shape of the network a checkpoint's model has,
// without its parameters: a command checks what it will hold against the
// memory it may use before it reads them (LoadModel).
func ModelShape(rd *checkpoint.Reader) (model.Config, error) {
	st, err := readState(rd)
	if err != nil {
		return model.Config{}, err
	}
	if st.ModelConfig == nil {
		return model.Config{}, fmt.Errorf("engine: checkpoint %s holds no MLP (a run of another workload)", rd.Path())
	}
	return *st.ModelConfig, nil
}
