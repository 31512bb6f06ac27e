package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Config gives the shape of an MLP.
type Config struct {
	Inputs  int   // D, the sparse input dimension
	Hidden  []int // widths of the hidden layers (ReLU); empty gives a linear model
	Outputs int   // L, the number of labels
	// LabelMajor stores the output layer's weights a row per label (L×In),
	// as a sampled output layer reads them (one label's weights together);
	// otherwise In×L like every other layer.
	LabelMajor bool
}

// MLP describes the shapes of a network and where each layer's parameters sit
// in the flat vector.
type MLP struct {
	cfg    Config
	layers []Layer
	size   int
}

// Layer is one affine map of the network and its place in the flat vector:
// weights at [W, W+In·Out), bias at [B, B+Out). The weights are In×Out,
// row-major, unless Transposed (the output layer of a LabelMajor network):
// Out×In.
type Layer struct {
	In, Out    int
	W, B       int
	Transposed bool
}

// New checks cfg and lays out the parameters.
func New(cfg Config) (*MLP, error) {
	if cfg.Inputs < 1 || cfg.Outputs < 1 {
		return nil, fmt.Errorf("model: need at least one input and one output, got %d and %d", cfg.Inputs, cfg.Outputs)
	}
	if cfg.LabelMajor && len(cfg.Hidden) == 0 {
		return nil, fmt.Errorf("model: a label-major output layer needs a hidden layer before it")
	}
	m := &MLP{cfg: Config{Inputs: cfg.Inputs, Hidden: append([]int(nil), cfg.Hidden...), Outputs: cfg.Outputs, LabelMajor: cfg.LabelMajor}}
	in := cfg.Inputs
	for i, h := range append(append([]int(nil), cfg.Hidden...), cfg.Outputs) {
		if h < 1 {
			return nil, fmt.Errorf("model: hidden layer %d has width %d", i+1, h)
		}
		l := Layer{In: in, Out: h, W: m.size, Transposed: cfg.LabelMajor && i == len(cfg.Hidden)}
		l.B = l.W + in*h
		m.size = l.B + h
		m.layers = append(m.layers, l)
		in = h
	}
	if m.size > math.MaxInt32*4 {
		return nil, fmt.Errorf("model: %d parameters is more than this build supports", m.size)
	}
	return m, nil
}

// Config returns the network's shape.
func (m *MLP) Config() Config { return m.cfg }

// NumParams returns the length of the flat parameter vector.
func (m *MLP) NumParams() int { return m.size }

// Layers returns the layers, input first.
func (m *MLP) Layers() []Layer { return m.layers }

// Init fills p with initial parameters drawn from a stream seeded by seed:
// every weight and bias of a layer with fan-in n uniform in ±1/√n, the
// default of PyTorch's nn.Linear, so that runs compare with the peer's.
func (m *MLP) Init(p []float32, seed uint64) {
	m.check(p, "parameters")
	r := rand.New(rand.NewPCG(seed, 0x1a17_0f_5eed))
	for _, l := range m.layers {
		bound := 1 / math.Sqrt(float64(l.In))
		for i := l.W; i < l.B+l.Out; i++ {
			p[i] = float32((2*r.Float64() - 1) * bound)
		}
	}
}

func (m *MLP) check(v []float32, what string) {
	if len(v) != m.size {
		panic(fmt.Sprintf("model: %s vector has length %d, want %d", what, len(v), m.size))
	}
}

// OutputRows returns the output layer's weights of parameters p a row per
// label (Out×In, row-major): p's own values when the network is label-major,
// otherwise a transposed copy in dst (grown when shorter than Out·In). Hash
// tables over the labels are built from these rows.
func (m *MLP) OutputRows(dst, p []float32) []float32 {
	m.check(p, "parameters")
	l := m.layers[len(m.layers)-1]
	if l.Transposed {
		return p[l.W:l.B]
	}
	if len(dst) < l.In*l.Out {
		dst = make([]float32, l.In*l.Out)
	}
	dst = dst[:l.In*l.Out]
	transpose(dst, p[l.W:l.B], l.In, l.Out)
	return dst
}

// transpose writes the cols×rows transpose of the rows×cols row-major
// matrix a into dst: between the two layouts of a layer's weights.
func transpose(dst, a []float32, rows, cols int) {
	for r := range rows {
		for c, v := range a[r*cols : (r+1)*cols] {
			dst[c*rows+r] = v
		}
	}
}
