package trained

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/runlog"
)

// Which names a model of a checkpoint folder.
type Which string

const (
	// Last is the model of the folder's newest checkpoint (or the file
	// itself, when the path is a file).
	Last Which = "last"
	// Best is the model of the run's best evaluation, kept in the folder's
	// best.hck.
	Best Which = "best"
)

var (
	// ErrWhich is a Which that is neither Last nor Best.
	ErrWhich = errors.New("want last or best")
	// ErrNotFolder is Best asked of a path that is no folder: only a
	// checkpoint folder keeps a best model.
	ErrNotFolder = errors.New("not a checkpoint folder, where a run keeps its best model (best.hck beside the checkpoints)")
	// ErrNoBest is Best asked of a folder without best.hck: its run kept
	// no best model (engine.Checkpointing.KeepBest), or has not evaluated.
	ErrNoBest = errors.New("the folder holds no best model (best.hck: written at a run's evaluations when it keeps its best model)")
)

// An NPZError is an .npz archive that holds no model.
type NPZError struct {
	File string // the archive
	Err  error  // what is wrong with it (model.ReadNPZ's error)
}

func (e *NPZError) Error() string { return e.File + ": " + e.Err.Error() }

func (e *NPZError) Unwrap() error { return e.Err }

// Model is a trained network with its parameters.
type Model struct {
	*model.MLP
	Params []float32 // laid out as the network says (model.MLP)
	File   string    // the file the model was read from
	// Scored is the evaluation that scored the model, when its file is a
	// checkpoint that holds one: best.hck holds the best evaluation, a
	// checkpoint its run's last. Nil for an archive.
	Scored *runlog.Eval
}

// File returns the file of the model which names at path: for Last, the
// newest checkpoint of the folder path, or path itself when it is a file;
// for Best, the folder's best.hck.
func File(path string, which Which) (string, error) {
	switch which {
	case Last:
		return checkpoint.Latest(path)
	case Best:
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("trained: %s: %w", path, ErrNotFolder)
		}
		best := checkpoint.Dir(path).Best()
		if _, err := os.Stat(best); err != nil {
			// Whatever the reason the file cannot be seen, the model asked
			// for is not there to read.
			return "", fmt.Errorf("trained: %s: %w", path, ErrNoBest)
		}
		return best, nil
	}
	return "", fmt.Errorf("trained: which model %q: %w", which, ErrWhich)
}

// Load reads the model which names at path (see File).
func Load(path string, which Which) (*Model, error) {
	file, err := File(path, which)
	if err != nil {
		return nil, err
	}
	return Read(file)
}

// Read reads the model in file: an .npz archive of model.WriteNPZ, or a
// checkpoint (a run's, or a best.hck). Every weight is checked finite.
func Read(file string) (*Model, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The first bytes tell the formats apart whatever the file's name: a
	// zip (an .npz) starts with "PK", a checkpoint with its own header.
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	m := &Model{File: file}
	var cfg model.Config
	if bytes.HasPrefix(head[:n], []byte("PK")) {
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if cfg, m.Params, err = model.ReadNPZ(f, fi.Size()); err != nil {
			return nil, &NPZError{File: file, Err: err}
		}
	} else {
		rd, err := checkpoint.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%w (want a checkpoint or an .npz of hetsgd export)", err)
		}
		defer rd.Close()
		if cfg, m.Params, err = engine.LoadModel(rd); err != nil {
			return nil, err
		}
		// Only said to the user: a checkpoint without a readable
		// evaluation is a model all the same.
		if e, ok, _ := engine.BestOf(rd); ok {
			m.Scored = &e
		}
	}
	if m.MLP, err = model.New(cfg); err != nil {
		return nil, err
	}
	return m, nil
}

// WriteNPZ writes the model as an .npz archive (model.WriteNPZ), which
// NumPy loads as it is and Read reads back.
func (m *Model) WriteNPZ(w io.Writer) error { return model.WriteNPZ(w, m.Config(), m.Params) }
