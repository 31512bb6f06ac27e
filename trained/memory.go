package trained

import (
	"fmt"

	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/model"
)

// Use is what a command does with a model besides holding its
// parameters, for the estimate of the memory it needs, checked before the
// parameters are read (Load) so that a model too large for the machine is
// refused with figures, not ended by the runtime half-way.
type Use struct {
	// What the command does with it, for the message: "predict".
	What string
	// Rows are the points scored at once: a workspace of every layer's
	// outputs for that many points (predict's chunks, an evaluation's
	// batches).
	Rows int
	// Export: the model is written as an archive, which turns a copy of
	// each label-major layer (model.MLP.ExportBytes).
	Export bool
	// Held are the bytes the command holds besides (the data it scores).
	Held int64
	// Fix says how to need less, in the command's words: "score fewer
	// points at once (--rows)".
	Fix string
}

// Need returns the bytes a model of m's shape needs for u: its
// parameters, and what u adds.
func (u Use) Need(m *model.MLP) int64 {
	b := memory.Add(memory.Mul(4, int64(m.NumParams())), u.Held)
	if u.Rows > 0 {
		b = memory.Add(b, m.WorkspaceBytes(u.Rows, kernel.Default().Workers()))
		b = memory.Add(b, memory.Mul(8, memory.Mul(int64(u.Rows), 5))) // the top labels
	}
	if u.Export {
		b = memory.Add(b, m.ExportBytes())
	}
	return b
}

// Check refuses u of model m, read from file, when it needs more
// memory than this process may use. The zero Use checks nothing more than
// the readers do (the parameters).
func (u Use) Check(m *model.MLP, file string) error {
	if u.What == "" {
		return nil
	}
	cfg := m.Config()
	what := fmt.Sprintf("%s with the model of %s (%d features, hidden layers %v, %d labels: %d parameters, %s)",
		u.What, file, cfg.Inputs, cfg.Hidden, cfg.Outputs, m.NumParams(), memory.Format(memory.Mul(4, int64(m.NumParams()))))
	if u.Rows > 0 {
		what += fmt.Sprintf(", %d points at a time", u.Rows)
	}
	if err := memory.Check(u.Need(m), what); err != nil {
		if u.Fix != "" {
			return fmt.Errorf("%w: %s", err, u.Fix)
		}
		return err
	}
	return nil
}
