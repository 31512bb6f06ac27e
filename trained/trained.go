package trained

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/tfidf"
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
	// checkpoint that holds one (best.hck holds the best evaluation, a
	// checkpoint its run's last) or an archive whose card does.
	Scored *runlog.Eval
	// Run is the run log's config record of the run that trained the
	// model (its settings, data and the data's digest), nil when the file
	// does not hold it (an earlier hetsgd's, an archive without a card).
	Run json.RawMessage
	// TestData is the test set that run scored the model on, as a --data
	// of eval takes it: a file, a dataset folder, or bundled:NAME; "" when
	// not known; TestFormat its format (--format), "" for detected.
	TestData, TestFormat string

	text    *tfidf.Model // Text's, once read
	textErr error
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

// Load reads the model which names at path (see File), its parameters
// once the memory use needs of a model of its shape is known to be there
// (Use.Check). It is Open, then ReadParams.
func Load(path string, which Which, use Use) (*Model, error) {
	m, err := Open(path, which)
	if err != nil {
		return nil, err
	}
	if err := m.ReadParams(use); err != nil {
		return nil, err
	}
	return m, nil
}

// Open reads what is known of the model which names at path (see File)
// but its parameters: its network, how it scored, and the run that
// trained it. ReadParams reads the parameters.
func Open(path string, which Which) (*Model, error) {
	file, err := File(path, which)
	if err != nil {
		return nil, err
	}
	return open(file)
}

// open is Open of a file.
func open(file string) (*Model, error) {
	m := &Model{File: file}
	err := m.read(func(f *os.File, size int64) error {
		cfg, err := model.NPZShape(f, size)
		if err != nil {
			return err
		}
		card, err := model.ReadNPZCard(f, size)
		if err != nil {
			return err
		}
		if card != nil {
			var c Card
			if err := json.Unmarshal(card, &c); err != nil {
				return fmt.Errorf("model: its card: %w", err)
			}
			m.Scored, m.Run, m.TestData, m.TestFormat = c.Scored, c.Run, c.TestData, c.TestFormat
		}
		return m.setShape(cfg)
	}, func(rd *checkpoint.Reader) error {
		cfg, err := engine.ModelShape(rd)
		if err != nil {
			return err
		}
		// Only said to the user: a checkpoint without a readable
		// evaluation, or without the settings of its run, is a model all
		// the same.
		if e, ok, _ := engine.BestOf(rd); ok {
			m.Scored = &e
		}
		if raw, err := rd.Bytes("settings"); err == nil {
			m.Run, m.TestData, m.TestFormat = runOf(raw)
		}
		return m.setShape(cfg)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ReadParams reads the parameters of a model Open read, once the memory
// use needs is known to be there (Use.Check).
func (m *Model) ReadParams(use Use) error {
	if err := use.Check(m.MLP, m.File); err != nil {
		return err
	}
	var cfg model.Config
	err := m.read(func(f *os.File, size int64) (err error) {
		cfg, m.Params, err = model.ReadNPZ(f, size)
		return err
	}, func(rd *checkpoint.Reader) (err error) {
		cfg, m.Params, err = engine.LoadModel(rd)
		return err
	})
	if was := m.Config(); err == nil && (cfg.Inputs != was.Inputs || cfg.Outputs != was.Outputs || !slices.Equal(cfg.Hidden, was.Hidden)) {
		m.Params = nil
		err = fmt.Errorf("%s was replaced while it was read: another network's (read it again)", m.File)
	}
	return err
}

// Read reads the model in file: an .npz archive of model.WriteNPZ, or a
// checkpoint (a run's, or a best.hck). Every weight is checked finite.
func Read(file string) (*Model, error) {
	m, err := open(file)
	if err != nil {
		return nil, err
	}
	if err := m.ReadParams(Use{}); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Model) setShape(cfg model.Config) (err error) {
	m.MLP, err = model.New(cfg)
	return err
}

// read opens m.File and calls npz for an archive, or ckpt for a
// checkpoint, told apart by their first bytes whatever the file's name: a
// zip (an .npz) starts with "PK", a checkpoint with its own header.
func (m *Model) read(npz func(f *os.File, size int64) error, ckpt func(rd *checkpoint.Reader) error) error {
	f, err := os.Open(m.File)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	if bytes.HasPrefix(head[:n], []byte("PK")) {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if err := npz(f, fi.Size()); err != nil {
			return &NPZError{File: m.File, Err: err}
		}
		return nil
	}
	rd, err := checkpoint.Open(m.File)
	if err != nil {
		return fmt.Errorf("%w (want a checkpoint or an .npz of hetsgd export)", err)
	}
	defer rd.Close()
	return ckpt(rd)
}

// WriteNPZ writes the model as an .npz archive (model.WriteNPZBytes),
// which NumPy loads as it is and Read reads back, with card as its model
// card (none when nil) and its text vectorizer, when it has one (Text).
func (m *Model) WriteNPZ(w io.Writer, card *Card) error {
	extra := map[string][]byte{}
	if card != nil {
		var err error
		if extra["card"], err = json.MarshalIndent(card, "", "  "); err != nil {
			return fmt.Errorf("trained: the model card: %w", err)
		}
	}
	switch t, err := m.Text(); {
	case err == nil:
		if extra["tfidf"], err = json.Marshal(t); err != nil {
			return fmt.Errorf("trained: the text vectorizer: %w", err)
		}
	case !errors.Is(err, ErrNoText):
		return err
	}
	return model.WriteNPZBytes(w, m.Config(), m.Params, extra)
}
