package data

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hetsgd/hetsgd/sparse"
)

// Dataset is a set of points: features X (Rows × features) and labels Y
// (Rows × labels, a pattern matrix).
type Dataset struct {
	Name string
	X    sparse.CSR
	Y    sparse.CSR
}

// Len returns the number of points.
func (d *Dataset) Len() int { return d.X.Rows }

// Features returns the dimension of the feature space.
func (d *Dataset) Features() int { return d.X.Cols }

// Labels returns the number of labels.
func (d *Dataset) Labels() int { return d.Y.Cols }

// ErrFormat is wrapped by every ParseError.
var ErrFormat = errors.New("data: bad input")

// ParseError reports bad input: the file (as named by the caller), the
// 1-based line (0 when the problem is not on one line) and what is wrong,
// with a hint of what to do when there is one (a setting.Error, which
// names the setting to change).
type ParseError struct {
	File string
	Line int
	Msg  string
	Hint error
}

func (e *ParseError) Error() string {
	msg := e.Msg
	if e.Hint != nil {
		msg += " (" + e.Hint.Error() + ")"
	}
	if e.Line > 0 {
		return fmt.Sprintf("data: %s:%d: %s", e.File, e.Line, msg)
	}
	return fmt.Sprintf("data: %s: %s", e.File, msg)
}

func (e *ParseError) Unwrap() []error {
	if e.Hint != nil {
		return []error{ErrFormat, e.Hint}
	}
	return []error{ErrFormat}
}

// Bytes returns the memory the set's arrays hold.
func (d *Dataset) Bytes() int64 {
	b := int64(0)
	for _, m := range []*sparse.CSR{&d.X, &d.Y} {
		b += 8*int64(len(m.Indptr)) + 4*int64(len(m.Indices)) + 4*int64(len(m.Values))
	}
	return b
}

// CheckPair verifies that a test set can be evaluated by a model trained on
// train: the same feature and label spaces.
func CheckPair(train, test *Dataset) error {
	if train.Features() != test.Features() || train.Labels() != test.Labels() {
		return fmt.Errorf("data: %s has %d features and %d labels but %s has %d and %d; a train/test pair must share both spaces",
			train.Name, train.Features(), train.Labels(), test.Name, test.Features(), test.Labels())
	}
	return nil
}

// ErrNoLabels is a set none of whose points has a label.
var ErrNoLabels = errors.New("none of its points has a label")

// CheckLabelled refuses a set none of whose first n points (0: all) has a
// label: P@k and nDCG@k count a point's true labels among its top k, so
// such a test set scores 0 whatever the model, and a training set teaches
// nothing.
func (d *Dataset) CheckLabelled(n int) error {
	if n <= 0 || n > d.Len() {
		n = d.Len()
	}
	if n > 0 && (len(d.Y.Indptr) <= n || d.Y.Indptr[n] == 0) {
		what := fmt.Sprintf("%d points", n)
		if n < d.Len() {
			what = fmt.Sprintf("first %d points (of %d)", n, d.Len())
		}
		return noLabels(fmt.Sprintf("data: %s: none of its %s has a label: P@k counts each point's true labels among its top labels, so it would score 0 whatever the model (give the set with its labels)", d.Name, what))
	}
	return nil
}

// noLabels is the error of CheckLabelled: its message says what to do.
type noLabels string

func (e noLabels) Error() string        { return string(e) }
func (e noLabels) Is(target error) bool { return target == ErrNoLabels }

// Fingerprint returns a SHA-256 digest of the dataset's content — shape,
// row pointers, feature ids and values, labels — and not of its name or
// where it came from, so that processes that loaded the same data by any
// path agree on it.
func (d *Dataset) Fingerprint() [32]byte {
	h := sha256.New()
	for _, m := range []*sparse.CSR{&d.X, &d.Y} {
		var dims [17]byte
		binary.LittleEndian.PutUint64(dims[:], uint64(m.Rows))
		binary.LittleEndian.PutUint64(dims[8:], uint64(m.Cols))
		if m.Values != nil {
			dims[16] = 1
		}
		h.Write(dims[:])
		h.Write(asBytes(m.Indptr))
		h.Write(asBytes(m.Indices))
		h.Write(asBytes(m.Values))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Pick returns the given rows of d, in that order, as a set of that name
// (its arrays its own).
func (d *Dataset) Pick(rows []int32, name string) *Dataset {
	b := NewBatch(d, len(rows))
	b.Gather(d, rows)
	return &Dataset{Name: name, X: b.X, Y: b.Y}
}

// Spaced returns d when n ≥ its points, otherwise n of its rows spread
// evenly over it (spread) as a set of that name.
func (d *Dataset) Spaced(n int, name string) *Dataset {
	N := d.Len()
	if n >= N {
		return d
	}
	rows := make([]int32, n)
	for k := range rows {
		rows[k] = int32(spread(k, N, n))
	}
	return d.Pick(rows, name)
}

// spread returns the k-th of n rows spread evenly over N (n ≤ N): k·N/n,
// rounded down, so that they are distinct and rise with k.
func spread(k, N, n int) int { return int(int64(k) * int64(N) / int64(n)) }
