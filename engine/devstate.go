package engine

import (
	"fmt"
	"math"
	"strconv"
)

// A device's part of a checkpoint: its books (deviceState, in the engine's
// section) and its vectors (sections named device/ID/…). The same code
// takes and restores them for a device of this process and, through the
// cluster's snapshot and restore commands, for one of another rank, so that
// a checkpoint is the same file whichever process held which device.

// snapshot returns d's books. working says its goroutine is computing a
// batch (real clock): its loss, preparation, gradient and random stream are
// being written, and are not read (the batch starts again on resume).
func (d *device) snapshot(working, gone bool) (deviceState, error) {
	ds := deviceState{Speed: d.speed, Stretch: d.stretch, LR: d.lr, Mode: d.mode, Rows: d.rows,
		HasGrad: !working && !gone, HasM: d.m != nil}
	if d.opt != nil {
		ds.OptSteps = d.opt.Steps()
	}
	if !working {
		ds.Loss, ds.Prepared = d.loss, d.prepared
	}
	var err error
	if ds.Noise, err = d.noiseSrc.MarshalBinary(); err != nil {
		return ds, err
	}
	if rs, ok := d.worker.(RandomStater); ok && !working {
		if ds.Random, err = rs.RandomState(); err != nil {
			return ds, err
		}
	}
	return ds, nil
}

// apply restores d's books from ds; its vectors are read by the caller,
// into deviceVectors.
func (d *device) apply(ds deviceState) error {
	d.speed, d.stretch, d.lr, d.mode, d.loss, d.rows, d.prepared = ds.Speed, ds.Stretch, ds.LR, ds.Mode, ds.Loss, ds.Rows, ds.Prepared
	d.stretchBits.Store(math.Float64bits(d.stretch))
	if err := d.noiseSrc.UnmarshalBinary(ds.Noise); err != nil {
		return fmt.Errorf("device %d's cost noise: %w", d.id, err)
	}
	if rs, ok := d.worker.(RandomStater); ok && ds.Random != nil {
		if err := rs.SetRandomState(ds.Random); err != nil {
			return fmt.Errorf("device %d: %w", d.id, err)
		}
	}
	if ds.HasM && d.m == nil {
		d.m = make([]float32, len(d.p))
	}
	if d.opt != nil {
		d.opt.SetSteps(ds.OptSteps)
	}
	return nil
}

// vectorNames names the sections of device id's vectors by ds — its
// replica, its gradient (unless it was working), the ops' state vector, the
// optimizer's optStates vectors — in the order they are written, sent and
// read. Every rank's optimizer keeps as many.
func vectorNames(id int, ds deviceState, optStates int) []string {
	pre := "device/" + strconv.Itoa(id) + "/"
	out := []string{pre + "p"}
	if ds.HasGrad {
		out = append(out, pre+"g")
	}
	if ds.HasM {
		out = append(out, pre+"m")
	}
	for j := range optStates {
		out = append(out, pre+"opt/"+strconv.Itoa(j))
	}
	return out
}

// vectors returns d's vectors in vectorNames' order.
func (d *device) vectors(ds deviceState) [][]float32 {
	out := [][]float32{d.p}
	if ds.HasGrad {
		out = append(out, d.g)
		d.written = true // a restore writes it
	}
	if ds.HasM {
		out = append(out, d.m)
	}
	if d.opt != nil {
		out = append(out, d.opt.State()...)
	}
	return out
}

// optStates is how many state vectors the optimizer keeps.
func (d *device) optStates() int {
	if d.opt == nil {
		return 0
	}
	return len(d.opt.State())
}
