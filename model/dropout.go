package model

import (
	"fmt"
	"math/rand/v2"
)

// Dropout is inverted dropout's random stream: each unit is zeroed with
// probability P and the others scaled by 1/(1−P), the masks drawn from a
// stream seeded once, whose state a checkpoint keeps. A Workspace applies
// it to its activations in place; a replica elsewhere (a GPU's) draws the
// same masks with Mask.
type Dropout struct {
	P   float32
	rng *rand.Rand
	pcg *rand.PCG // rng's source
}

// NewDropout returns the stream of masks of probability p seeded by seed.
func NewDropout(p float64, seed uint64) (*Dropout, error) {
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("model: dropout %v must be in [0, 1)", p)
	}
	pcg := rand.NewPCG(seed, 0xd0_0a7)
	return &Dropout{P: float32(p), rng: rand.New(pcg), pcg: pcg}, nil
}

// threshold is the 24-bit draw below which a unit is kept.
func (d *Dropout) threshold() uint32 { return uint32(float64(1-d.P) * (1 << 24)) }

// Apply zeroes or scales the activations a in place, drawing the next
// len(a) units' mask: 24-bit uniform draws, two per 64-bit word.
func (d *Dropout) Apply(a []float32) {
	scale, threshold := 1/(1-d.P), d.threshold()
	for i := 0; i < len(a); i += 2 {
		r := d.rng.Uint64()
		for k := 0; k < 2 && i+k < len(a); k++ {
			if uint32(r>>(32*k))&(1<<24-1) < threshold {
				a[i+k] *= scale
			} else {
				a[i+k] = 0
			}
		}
	}
}

// Mask draws the next len(m) units' mask as Apply would, writing each
// unit's factor: 1/(1−P) or 0.
func (d *Dropout) Mask(m []float32) {
	for i := range m {
		m[i] = 1
	}
	d.Apply(m)
}

// State returns the stream's state.
func (d *Dropout) State() ([]byte, error) { return d.pcg.MarshalBinary() }

// SetState restores a state State returned: the masks drawn next are
// those that would have followed it.
func (d *Dropout) SetState(b []byte) error {
	if err := d.pcg.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("model: the dropout stream's state: %w", err)
	}
	return nil
}
