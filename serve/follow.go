package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/trained"
)

// Load reads the model which names at path (trained.File): a checkpoint
// folder's newest or best model, a checkpoint file or an .npz archive,
// refused when the machine lacks the memory to serve it in passes of
// batch points besides held bytes (a model being replaced); ranking
// through the tables that tables gives for its shape, when not nil
// (Served).
func Load(path string, which trained.Which, batch int, held int64, tables func(*model.MLP) (*metric.Tables, error)) (Model, error) {
	_, mod := Stat(path, which) // before the read: a file replaced during it is read again
	m, err := trained.Load(path, which, trained.Use{What: "serving", Rows: batch, Held: held, Fix: "serve with a smaller --max-batch"})
	if err != nil {
		return Model{}, err
	}
	return Served(m, mod, tables)
}

// Served is the model m, its parameters read, as a Server scores with it:
// with its text vectorizer when it has one, modified at mod (Stat's), and,
// when tables is not nil, ranking through the tables it gives for m's
// shape (Model.Ranker), built now if the memory they take is there.
func Served(m *trained.Model, mod time.Time, tables func(*model.MLP) (*metric.Tables, error)) (Model, error) {
	t, err := m.Text()
	if err != nil && !errors.Is(err, trained.ErrNoText) {
		return Model{}, err
	}
	s := Model{MLP: m.MLP, Params: m.Params, Version: m.File, Modified: mod, Text: t}
	if tables == nil {
		return s, nil
	}
	tab, err := tables(m.MLP)
	if err != nil || tab == nil {
		return s, err
	}
	if err := memory.Check(metric.TablesBytes(m.MLP, *tab), "serving through approximate top-k's tables"); err != nil {
		return Model{}, fmt.Errorf("serve: %w: fewer --lsh-l, a smaller --lsh-k", err)
	}
	if s.Ranker, err = metric.NewTableRanker(m.MLP, m.Params, *tab); err != nil {
		return Model{}, err
	}
	return s, nil
}

// Stat returns the file which names at path and its modification time
// ("" when there is none to read).
func Stat(path string, which trained.Which) (string, time.Time) {
	file, err := trained.File(path, which)
	if err != nil {
		return "", time.Time{}
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", time.Time{}
	}
	return file, fi.ModTime()
}

// Follow checks every interval, until ctx ends, whether the model which
// names at path is another file than the server's or was modified since
// the server's was read (Model.Modified), and swaps it in when it is; say
// is told of each reload, and of a reload that failed (the server keeps
// its model, and tries that file again once it changes). A run writing
// checkpoints into a folder is followed so: each new checkpoint is served
// once written whole (checkpoints are written under a temporary name and
// renamed).
func (s *Server) Follow(ctx context.Context, path string, which trained.Which, every time.Duration, say func(string)) {
	cur := s.Current()
	file, mod := cur.Version, cur.Modified
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f, m := Stat(path, which)
		if f == "" || (f == file && m.Equal(mod)) {
			continue
		}
		cur := s.Current()
		next, err := Load(path, which, s.opt.MaxBatch, 4*int64(len(cur.Params)), s.opt.Tables)
		file, mod = f, m // a file that failed is not tried again until it changes
		if err != nil {
			say(fmt.Sprintf("kept %s: reloading %s failed: %v", cur.Version, f, err))
			continue
		}
		if a, b := next.MLP.Config(), cur.MLP.Config(); a.Inputs != b.Inputs || a.Outputs != b.Outputs {
			say(fmt.Sprintf("%s has %d features and %d labels, %s had %d and %d", next.Version, a.Inputs, a.Outputs, cur.Version, b.Inputs, b.Outputs))
		}
		s.Swap(next)
		say("serving " + next.Version)
	}
}
