package engine

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/optim"
	"github.com/hetsgd/hetsgd/strategy"
)

// device is one replica with everything a training step touches, allocated
// once for the largest batch the strategy dispatches.
type device struct {
	id    int
	speed float64
	p, g  []float32 // replica and gradient (nil when timing only)
	// written: something besides the worker may have written into g since
	// its last batch (an op that took it, Grad; a checkpoint; a commit):
	// a ZeroKeeper worker then clears it whole.
	written bool
	m       []float32 // the ops' state vector on this device (Replica.State), allocated at its first use
	opt     optim.Optimizer
	upd     kernel.Update // the step being applied (Stepper workers)
	// lazy is the rank's list of touched rows (executor.lazy), which an
	// op's Step on the device's own gradient uses, one device at a time;
	// nil when the worker updates every weight.
	lazy   *lazyRows
	worker Worker
	noise  *rand.Rand // virtual clock: cost noise
	// noiseSrc is noise's source, whose state a checkpoint keeps.
	noiseSrc *rand.PCG

	jobs     chan struct{} // real clock: work for the device's goroutine
	prepared bool          // its next batch was prepared during a collective
	prep     float64       // real clock: seconds of simulated decoding per row (Config.Prep)
	stretch  float64       // real clock: its batches take this many times their compute time (speeds)
	// stretchBits is stretch as its goroutine reads it, batch by batch: a
	// Slow fault changes it while the device works.
	stretchBits atomic.Uint64
	lr          float32
	mode        strategy.Mode
	loss        float64 // mean loss of the last batch
	rows        int     // rows of the last batch
	msg         []byte  // ranks other than 0: the report of a finished batch (its own allocation: cgo checks a whole object for Go pointers)
}

// The device as an op sees it (strategy.Replica).
func (d *device) ID() int           { return d.id }
func (d *device) Params() []float32 { return d.p }
func (d *device) Grad() []float32   { d.written = true; return d.g }

// Step applies g with the device's optimizer. Its own last gradient (an
// op's step on the device's batch, as CROSSBOW's synchronisation takes)
// is applied as that batch's Step would have, under the worker's lazy rule
// when it has one; any other vector reaches every weight.
func (d *device) Step(g []float32, lr float32) {
	if d.lazy == nil || len(g) == 0 || &g[0] != &d.g[0] {
		d.opt.Step(d.p, g, lr)
		return
	}
	la := d.worker.(LazyApplier)
	d.lazy.rows = la.AppendLast(d.lazy.rows[:0])
	d.upd = d.opt.Fused(lr)
	la.ApplyRows(d.p, g, d.lazy.rows, &d.upd)
}

// State allocates the ops' vector at its first use: only a strategy whose
// op keeps one pays for it.
func (d *device) State() []float32 {
	if d.m == nil && d.p != nil {
		d.m = make([]float32, len(d.p))
	}
	return d.m
}

// keepZeros lets ZeroKeeper workers clear only what their last batch
// wrote (off in a test, for the reference run).
var keepZeros = true

// compute runs the loaded batch: the gradient, and with LocalStep the
// optimizer update of the replica, fused with the backward pass when the
// worker can. It does not allocate.
func (d *device) compute() {
	if k, ok := d.worker.(ZeroKeeper); ok && !d.written && keepZeros {
		k.KeepZeros()
	}
	d.written = false
	if d.mode == strategy.LocalStep {
		if s, ok := d.worker.(Stepper); ok {
			d.upd = d.opt.Fused(d.lr)
			d.loss = s.Step(d.p, d.g, &d.upd)
			return
		}
		d.loss = d.worker.Gradient(d.p, d.g)
		d.opt.Step(d.p, d.g, d.lr)
		return
	}
	d.loss = d.worker.Gradient(d.p, d.g)
}

// work is a device's goroutine under the real clock: compute each batch it
// is handed on jobs (d.jobs, passed so that stopDevices may clear the field
// while the goroutine starts), then wait out its injected slowdown — with
// stretch s the batch takes s times its compute time in all — and report.
// Once hurry is closed (the run is stopping) the simulated decoding and the
// slowdown are skipped: only real computation holds a stop up.
func (d *device) work(jobs <-chan struct{}, hurry <-chan struct{}, report func(*device)) {
	var timer *time.Timer
	for range jobs {
		stretch := math.Float64frombits(d.stretchBits.Load())
		t0 := time.Now()
		if d.prep > 0 && !d.prepared {
			busy(time.Duration(d.prep*float64(d.rows)*1e9), nil, hurry)
		}
		d.prepared = false
		d.compute() // the run never uses the real clock with TimingOnly
		if stretch > 1 {
			wait := time.Duration(float64(time.Since(t0)) * (stretch - 1))
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-hurry:
				timer.Stop()
			}
		}
		report(d)
	}
}

// noiseFactor draws the multiplicative cost noise exp(σZ − σ²/2), of mean 1.
func (d *device) noiseFactor(sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	return math.Exp(sigma*d.noise.NormFloat64() - sigma*sigma/2)
}

// slowDown makes the device factor times slower from now on: under the
// virtual clock its speed, under the real clock its goroutine's stretch.
func (d *device) slowDown(factor float64) {
	d.speed /= factor
	d.stretch *= factor
	d.stretchBits.Store(math.Float64bits(d.stretch))
}
