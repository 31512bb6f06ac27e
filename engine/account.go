package engine

import (
	"fmt"
	"strconv"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/strategy"
	"github.com/hetsgd/hetsgd/workload"
)

// What an executor reports of its devices, as results rather than fields:
// a batch it ran (to be priced by the virtual clock), the model the run
// evaluates, and its half of a checkpoint — its vectors and its devices'
// books — written and read back by the executor itself. The driver, the
// clocks and the checkpoint reach them through the job (job.go).

// batchRun is a batch a device ran at once under the virtual clock, as
// the clock prices it: its rows and nonzeros, whether the device also
// stepped its replica, whether its data was prepared during a collective,
// the device's speed, the batch's cost noise factor, and what a sampled
// layer's batch computed.
type batchRun struct {
	dev       int
	rows, nnz int
	localStep bool
	prepared  bool
	speed     float64
	noise     float64
	work      workload.Work // what it did beyond its shape (a sampled layer's)
}

// runNow loads batch w onto its device (a device of this rank) and, unless
// compute is false (timing only), computes it; sigma is the cost noise's.
// The device's next batch is no longer prepared.
func (x *executor) runNow(w work, compute bool, sigma float64) batchRun {
	d := x.local(w.dev)
	x.load(d, w)
	if compute {
		d.compute()
	}
	rows, nnz := d.worker.Loaded()
	b := batchRun{dev: d.id, rows: rows, nnz: nnz, localStep: d.mode == strategy.LocalStep, prepared: d.prepared,
		speed: d.speed}
	if a, ok := d.worker.(Accountant); ok && compute {
		b.work = a.LastWork()
	}
	d.prepared = false
	b.noise = d.noiseFactor(sigma)
	return b
}

// prepareNext prepares every device's next batch during a collective
// (prep seconds per row, at its speed) and returns how long the slowest
// takes.
func (x *executor) prepareNext(prep float64) float64 {
	t := 0.0
	for _, d := range x.devs {
		t = max(t, prep*float64(d.rows)/d.speed)
		d.prepared = true
	}
	return t
}

// lastLoss is the mean loss of device dev's last batch (a device of this
// rank).
func (x *executor) lastLoss(dev int) float64 { return x.local(dev).loss }

// evaluated returns the model the run evaluates: the centre, or with
// replica the first replica still in the run (they are equal in every
// strategy that evaluates a replica); name is its section in a checkpoint.
func (x *executor) evaluated(replica bool) (p []float32, name string) {
	if replica {
		for _, d := range x.devs {
			if !x.members.gone(d.id) {
				return d.p, "device/" + strconv.Itoa(d.id) + "/p"
			}
		}
	}
	return x.center, "center"
}

// layeredTiming is where this rank's time went in layered all-reduces (false:
// it made none).
func (x *executor) layeredTiming() (LayeredTiming, bool) { return x.lay, x.lay.Steps > 0 }

// hasCentreState reports whether the ops keep a vector beside the centre.
func (x *executor) hasCentreState() bool { return x.cstate != nil }

// hasPending reports whether the ops keep sums of reductions in flight.
func (x *executor) hasPending() bool { return x.pending != nil }

// writeCentre writes the vectors every rank holds alike: the centre, the
// centre before the last Advance, and the ops' vector beside it.
func (x *executor) writeCentre(w *checkpoint.Writer) {
	w.Float32s("center", x.center)
	w.Float32s("prev", x.prev)
	if x.cstate != nil {
		w.Float32s("dprev", x.cstate)
	}
	if x.pending != nil {
		w.Float32s("pending", x.pending)
	}
}

// vectorNames names device id's vectors in a checkpoint, books ds.
func (x *executor) vectorNames(id int, ds deviceState) []string {
	return vectorNames(id, ds, x.devs[0].optStates())
}

// writeDevice writes device id's vectors, by its books ds, when this rank
// holds it; false when another rank does.
func (x *executor) writeDevice(w *checkpoint.Writer, id int, ds deviceState) bool {
	d := x.local(id)
	if d == nil {
		return false
	}
	names := x.vectorNames(id, ds)
	for j, v := range d.vectors(ds) {
		w.Float32s(names[j], v)
	}
	return true
}

// book returns the books of device id for a checkpoint (working: its
// goroutine is computing a batch); false when another rank holds it.
func (x *executor) book(id int, working bool) (deviceState, bool, error) {
	d := x.local(id)
	if d == nil {
		return deviceState{}, false, nil
	}
	ds, err := d.snapshot(working, x.members.gone(id))
	return ds, true, err
}

// restore puts this rank's centre and devices in the state of checkpoint
// rd, whose engine books are st (the devices that left the run already
// left the membership record).
func (x *executor) restore(rd *checkpoint.Reader, st *engineState) error {
	if err := x.restoreCentre(rd, st); err != nil {
		return err
	}
	// Each rank restores its own devices from the file (under mpirun every
	// rank reads the checkpoint).
	for _, d := range x.devs {
		ds := st.Devices[d.id]
		if err := d.apply(ds); err != nil {
			return fmt.Errorf("engine: checkpoint %s: %w", rd.Path(), err)
		}
		if x.members.gone(d.id) {
			continue
		}
		names := vectorNames(d.id, ds, d.optStates())
		for j, v := range d.vectors(ds) {
			if err := rd.FiniteFloat32s(names[j], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreResized starts every device of this rank from the evaluated
// model of checkpoint rd and the optimizer state of its device first,
// for a run resumed on another number of devices.
func (x *executor) restoreResized(rd *checkpoint.Reader, st *engineState, first int) error {
	if err := x.restoreCentre(rd, st); err != nil {
		return err
	}
	pre := "device/" + strconv.Itoa(first) + "/"
	for _, d := range x.devs {
		if err := rd.FiniteFloat32s(st.Model, d.p); err != nil {
			return err
		}
		clear(d.g)
		d.written = true
		d.m = nil
		if d.opt != nil {
			for j, v := range d.opt.State() {
				if err := rd.FiniteFloat32s(pre+"opt/"+strconv.Itoa(j), v); err != nil {
					return err
				}
			}
			d.opt.SetSteps(st.Devices[first].OptSteps)
		}
	}
	return nil
}

// restoreCentre reads the vectors of the run the executor holds beside its
// devices: the centre, the previous centre and the ops' vector beside it.
func (x *executor) restoreCentre(rd *checkpoint.Reader, st *engineState) error {
	if err := rd.FiniteFloat32s("center", x.center); err != nil {
		return err
	}
	if err := rd.FiniteFloat32s("prev", x.prev); err != nil {
		return err
	}
	if st.HasDPrev {
		x.cstate = make([]float32, len(x.center))
		if err := rd.FiniteFloat32s("dprev", x.cstate); err != nil {
			return err
		}
	}
	if st.HasPending {
		x.pending = make([]float32, len(x.center))
		return rd.FiniteFloat32s("pending", x.pending)
	}
	return nil
}
