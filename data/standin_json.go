package data

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
)

// StandInFormat names the JSON layout of a saved StandIn; a file of
// another format is refused rather than half understood.
const StandInFormat = "hetsgd-standin/1"

// standInMaxBytes bounds a stand-in file: a fitted one is a few
// kilobytes, and the reader holds it whole.
const standInMaxBytes = 1 << 20

// standInMaxKnots bounds each list of a stand-in file.
const standInMaxKnots = 4096

type standInFile struct {
	Format string `json:"format"`
	*StandIn
}

// WriteJSON writes s as indented JSON with its format name.
func (s *StandIn) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(standInFile{StandInFormat, s}, "", "  ")
	if err != nil {
		return fmt.Errorf("data: encoding the stand-in of %s: %w", s.Name, err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("data: writing the stand-in of %s: %w", s.Name, err)
	}
	return nil
}

// ReadStandIn reads a StandIn that WriteJSON wrote; name (the file's) is
// in every error, with the setting that is wrong. Unknown keys are errors,
// so that a misspelt one is not silently left at zero.
func ReadStandIn(r io.Reader, name string) (*StandIn, error) {
	b, err := io.ReadAll(io.LimitReader(r, standInMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("data: reading %s: %w", name, err)
	}
	if len(b) > standInMaxBytes {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("more than %d bytes: not a stand-in file", standInMaxBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	f := standInFile{StandIn: new(StandIn)}
	if err := dec.Decode(&f); err != nil {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("not a stand-in file: %v", err)}
	}
	if dec.More() {
		return nil, &ParseError{File: name, Msg: "text after the stand-in's JSON object"}
	}
	if f.Format != StandInFormat {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("format %q, want %q", f.Format, StandInFormat)}
	}
	if err := f.StandIn.Check(); err != nil {
		return nil, &ParseError{File: name, Msg: err.Error()}
	}
	return f.StandIn, nil
}

// LoadStandIn reads the stand-in file at path.
func LoadStandIn(path string) (*StandIn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	return ReadStandIn(f, path)
}

// errStandIn is wrapped by the errors of Check.
var errStandIn = errors.New("invalid stand-in")

// Check reports the first parameter of s that the generator cannot use,
// by its JSON name.
func (s *StandIn) Check() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", errStandIn, field, fmt.Sprintf(format, args...))
	}
	for _, c := range []struct {
		field     string
		v, lo, hi int
	}{
		{"train", s.Train, 0, math.MaxInt32},
		{"test", s.Test, 0, math.MaxInt32},
		{"features", s.Features, 1, math.MaxInt32},
		{"labels", s.Labels, 1, math.MaxInt32},
		{"topics", s.Topics, 1, s.Labels},
		{"prototype_size", s.PrototypeSize, 1, s.Features},
	} {
		if c.v < c.lo || c.v > c.hi {
			return bad(c.field, "%d, want a whole number in [%d, %d]", c.v, c.lo, c.hi)
		}
	}
	for _, c := range []struct {
		field     string
		v, lo, hi float64
	}{
		{"concentration", s.Concentration, 0, 0.999},
		{"signal", s.Signal, 0, 1},
		{"topic_share", s.TopicShare, 0, 1},
		{"vague", s.Vague, 0, 1},
		{"proxy_p1", s.ProxyP1, 0, 1},
		{"speed", s.Speed, 0, 1},
		{"late", s.Late, 0, 1},
		{"row_norm", s.RowNorm, 0, 1e6},
	} {
		if !(c.v >= c.lo && c.v <= c.hi) {
			return bad(c.field, "%v, want a number in [%v, %v]", c.v, c.lo, c.hi)
		}
	}
	if s.Calibration != "" && s.Calibration != CalibrateLogShare {
		return bad("calibration", "%q, want %q or none", s.Calibration, CalibrateLogShare)
	}
	for _, q := range []struct {
		field string
		v     []float64
	}{{"labels_per_point", s.LabelsPerPoint}, {"features_per_point", s.FeaturesPerPoint}} {
		if len(q.v) < 2 || len(q.v) > standInMaxKnots {
			return bad(q.field, "%d quantiles, want 2 to %d", len(q.v), standInMaxKnots)
		}
		for i, x := range q.v {
			if !(x >= 0 && x <= math.MaxInt32) || i > 0 && x < q.v[i-1] {
				return bad(fmt.Sprintf("%s[%d]", q.field, i), "%v: quantiles are counts in [0, %d], non-decreasing", x, math.MaxInt32)
			}
		}
	}
	if meanQuantile(s.LabelsPerPoint) < 0.5 {
		return bad("labels_per_point", "mean %.3g: a point needs a label", meanQuantile(s.LabelsPerPoint))
	}
	for _, c := range []struct {
		field string
		v     Curve
	}{{"label_curve", s.LabelCurve}, {"feature_curve", s.FeatureCurve}} {
		if len(c.v.At) < 1 || len(c.v.At) > standInMaxKnots || len(c.v.At) != len(c.v.Value) {
			return bad(c.field, "%d knots and %d values, want as many of each, 1 to %d", len(c.v.At), len(c.v.Value), standInMaxKnots)
		}
		for i := range c.v.At {
			if a := c.v.At[i]; !(a > 0 && a <= 1) || i > 0 && a <= c.v.At[i-1] {
				return bad(fmt.Sprintf("%s.at[%d]", c.field, i), "%v: knots are rank fractions in (0, 1], increasing", a)
			}
			if v := c.v.Value[i]; !(v >= 1e-12 && v <= 1) {
				return bad(fmt.Sprintf("%s.value[%d]", c.field, i), "%v: values are shares of points in [1e-12, 1]", v)
			}
		}
	}
	if a := s.Anchors; a != nil {
		if len(a.At) < 1 || len(a.At) > standInMaxKnots || len(a.At) != len(a.Value) {
			return bad("anchors", "%d knots and %d values, want as many of each, 1 to %d", len(a.At), len(a.Value), standInMaxKnots)
		}
		for i := range a.At {
			if x := a.At[i]; !(x > 0 && x <= 1) || i > 0 && x <= a.At[i-1] {
				return bad(fmt.Sprintf("anchors.at[%d]", i), "%v: knots are rank fractions in (0, 1], increasing", x)
			}
			if v := a.Value[i]; !(v >= 0 && v <= 1) {
				return bad(fmt.Sprintf("anchors.value[%d]", i), "%v: values are chances in [0, 1]", v)
			}
		}
	}
	return s.checkSense()
}

// Save writes s to path as WriteJSON does, whole or not at all; an
// existing file is replaced only when overwrite is set.
func (s *StandIn) Save(path string, overwrite bool) error {
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b.Bytes(), overwrite); err != nil {
		return fmt.Errorf("data: saving the stand-in of %s: %w", s.Name, err)
	}
	return nil
}
