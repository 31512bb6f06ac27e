package trained

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/tfidf"
)

// ErrNoText is a model without a text vectorizer: its inputs are features
// only.
var ErrNoText = errors.New("the model has no text vectorizer: it was trained on a set that hetsgd data from-text did not make (give it features, not text)")

// Text returns the text vectorizer of the model's inputs, with its labels'
// names (package tfidf), read on the first call. It is, in that order:
//   - an archive's tfidf array (hetsgd export carries it on);
//   - the tfidf.json beside a checkpoint, which hetsgd train copies from a
//     --data folder that data from-text made;
//   - the tfidf.json of the folder the run scored the model on (TestData),
//     for a checkpoint of an earlier hetsgd.
//
// A vectorizer whose terms or labels are not the model's inputs or
// outputs is refused, named; none is ErrNoText.
func (m *Model) Text() (*tfidf.Model, error) {
	if m.text != nil || m.textErr != nil {
		return m.text, m.textErr
	}
	m.text, m.textErr = m.findText()
	return m.text, m.textErr
}

func (m *Model) findText() (*tfidf.Model, error) {
	if m.File == "" {
		return nil, ErrNoText // a model made in memory
	}
	var b []byte
	name := ""
	err := m.read(func(f *os.File, size int64) (err error) {
		b, err = model.ReadNPZBytes(f, size, "tfidf", math.MaxInt32)
		name = m.File + "'s tfidf array"
		return err
	}, func(*checkpoint.Reader) error {
		for _, dir := range []string{filepath.Dir(m.File), m.TestData} {
			if dir == "" || !atomicfile.IsDir(dir) {
				continue
			}
			name = filepath.Join(dir, tfidf.File)
			var err error
			if b, err = os.ReadFile(name); err == nil || !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("trained: the text vectorizer: %w", err)
	case b == nil:
		return nil, ErrNoText
	}
	t, err := tfidf.Parse(b, name)
	if err != nil {
		return nil, err
	}
	if c := m.Config(); len(t.Terms) != c.Inputs || len(t.Labels) != c.Outputs {
		return nil, fmt.Errorf("trained: %s has %d terms and %d labels, but the model %s takes %d features and gives %d labels: not its vectorizer", name, len(t.Terms), len(t.Labels), m.File, c.Inputs, c.Outputs)
	}
	return t, nil
}
