package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/strategy"
)

// job is the run's devices as the driver commands them: this rank's
// executor and, in a distributed run, the other ranks' through the
// cluster. Each method is one command, carried out wherever the devices it
// concerns are, and returns its result; the driver, the faults and the
// real clock reach the devices through it rather than asking which rank
// holds what.
type job struct {
	x  *executor
	cl *cluster // the other ranks (nil in one process)
}

// dispatch starts batch w on its device: loaded and started on its
// goroutine here (under Pull, θ copied first), or sent, with θ for a pull,
// to the device's rank.
func (j job) dispatch(w work) error {
	if d := j.x.local(w.dev); d != nil {
		j.x.load(d, w)
		j.x.run(d)
		return nil
	}
	return j.cl.dispatch(w, j.x.center)
}

// collective runs a collective command on every rank; next are the
// batches that start once it is done, each rank preparing its own while it
// runs (a layered all-reduce).
func (j job) collective(c *command, next []work) error {
	mine := next
	if j.cl != nil {
		if err := j.cl.broadcastWith(c, next); err != nil {
			return err
		}
		mine = j.cl.mine(0, next)
	}
	c.next = mine
	return j.x.collective(c)
}

// query runs a query command on every rank and returns its two values for
// every device of the job.
func (j job) query(c *command) (values, second []float64, err error) {
	if j.cl != nil {
		if err := j.cl.broadcast(c); err != nil {
			return nil, nil, err
		}
	}
	return j.x.query(c)
}

// commit applies device a.Device's update to the centre by the action's
// op, wherever the device is, and returns the op's statistic.
func (j job) commit(a *strategy.Action) (float64, error) {
	if d := j.x.local(a.Device); d != nil {
		return j.x.commit(d, a)
	}
	op, err := j.x.committer(a.Op)
	if err != nil {
		return 0, err
	}
	return j.cl.commit(a, op, j.x)
}

// slow makes device d factor times slower, wherever it is.
func (j job) slow(d int, factor float64) error {
	if dev := j.x.local(d); dev != nil {
		dev.slowDown(factor)
		return nil
	}
	return j.cl.slow(d, factor)
}

// leave tells the other ranks that device d left the run (this rank's
// executor shares the driver's membership record): every executor leaves
// it out of its collectives, each counting the same devices live.
func (j job) leave(d int) error {
	if j.cl == nil {
		return nil
	}
	return j.cl.leave(d)
}

// strikeRank strikes rank fault f on its rank.
func (j job) strikeRank(f Fault) error {
	if f.Rank == 0 {
		j.x.strikeRank(f)
		return nil
	}
	return j.cl.strike(f)
}

// stop ends the other ranks' service.
func (j job) stop() error {
	if j.cl == nil {
		return nil
	}
	return j.cl.stop()
}

// distributed reports whether the job spans ranks.
func (j job) distributed() bool { return j.cl != nil }

// live is the number of devices still in the run.
func (j job) live() int { return j.x.live() }

// op returns the op named name, as every rank runs it.
func (j job) op(name string) (strategy.Op, error) { return j.x.op(name) }

// runNow runs batch w at once (the virtual clock, in one process) and
// returns its account for the clock to price.
func (j job) runNow(w work, compute bool, sigma float64) batchRun {
	return j.x.runNow(w, compute, sigma)
}

// prepareNext prepares every device's next batch during a collective
// (virtual clock) and returns how long the slowest takes.
func (j job) prepareNext(prep float64) float64 { return j.x.prepareNext(prep) }

// applied is the parameters the last all-reduce's update changed, 0 for
// every one (the same on every rank: the union of the rows is summed).
func (j job) applied() int64 { return j.x.applied }

// lastLoss is the mean loss of device dev's last batch run by runNow.
func (j job) lastLoss(dev int) float64 { return j.x.lastLoss(dev) }

// evaluated returns the model the run evaluates (replica: a replica's, not
// the centre's) and its name in a checkpoint.
func (j job) evaluated(replica bool) ([]float32, string) { return j.x.evaluated(replica) }

// layered is where rank 0's time went in layered all-reduces across ranks.
func (j job) layered() (LayeredTiming, bool) { return j.x.layeredTiming() }

// start starts the devices' goroutines (real clock): every finished batch,
// of this rank's devices or, through the cluster, of another rank's, is
// reported on done.
func (j job) start(done chan<- doneMsg) {
	j.x.startDevices(func(d *device) { done <- doneMsg{dev: d.id, loss: d.loss} })
	if j.cl != nil {
		go j.cl.receive(done)
	}
}

// hurry tells this rank's devices at work that the run is stopping (the
// other ranks' learn it from their own signal, or from hurryAll).
func (j job) hurry() { j.x.hurryDevices() }

// hurryAll tells the devices at work, wherever they are, that the run is
// stopping: for a stop that only rank 0 was told of.
func (j job) hurryAll() error {
	j.x.hurryDevices()
	if j.cl == nil {
		return nil
	}
	return j.cl.hurry()
}

// stopDevices stops this rank's goroutines and the receiving of the other
// ranks' reports.
func (j job) stopDevices() {
	j.x.stopDevices()
	if j.cl != nil {
		j.cl.quit()
	}
}

// close releases this rank's devices.
func (j job) close() { j.x.close() }

// books returns every device's books for a checkpoint, this rank's and the
// other ranks' (working: the devices whose goroutines are computing a
// batch).
func (j job) books(working []bool) ([]deviceState, error) {
	// The checkpoint saves what the collectives in flight sum: they
	// complete first.
	if err := j.x.settle(); err != nil {
		return nil, err
	}
	var remote map[int]deviceState
	if j.cl != nil {
		var err error
		if remote, err = j.cl.snapshot(working); err != nil {
			return nil, err
		}
	}
	out := make([]deviceState, 0, len(working))
	for id := range working {
		ds, mine, err := j.x.book(id, working[id])
		if err != nil {
			return nil, err
		}
		if !mine {
			var ok bool
			if ds, ok = remote[id]; !ok {
				return nil, fmt.Errorf("engine: checkpoint: no books of device %d from its rank", id)
			}
		}
		out = append(out, ds)
	}
	return out, nil
}

// writeVectors writes the run's vectors into checkpoint w: the centre's,
// then every device's still in the run, in the order of the devices — this
// rank's from its memory, another's as its rank sends them (a rank's
// devices are consecutive, and it sends them in order); books are the
// devices' (books).
func (j job) writeVectors(w *checkpoint.Writer, books []deviceState) error {
	j.x.writeCentre(w)
	for id, ds := range books {
		if j.x.members.gone(id) || j.x.writeDevice(w, id, ds) {
			continue
		}
		if id%j.cl.k == 0 {
			if err := j.cl.askVectors(j.cl.owner(id)); err != nil {
				return err
			}
		}
		for _, name := range j.x.vectorNames(id, ds) {
			if err := j.cl.recvVector(j.cl.owner(id), j.x.scratch); err != nil {
				return fmt.Errorf("engine: checkpoint: %s: %w", name, err)
			}
			w.Float32s(name, j.x.scratch)
		}
	}
	return nil
}

// hasCentreState reports whether the ops keep a vector beside the centre
// (a checkpoint says so, to read it back).
func (j job) hasCentreState() bool { return j.x.hasCentreState() }

// hasPending reports whether the ops keep sums of reductions in flight (a
// checkpoint says so, to read them back).
func (j job) hasPending() bool { return j.x.hasPending() }

// restore puts this rank's devices and centre in the state of checkpoint
// rd (every rank reads it).
func (j job) restore(rd *checkpoint.Reader, st *engineState) error { return j.x.restore(rd, st) }

// restoreResized starts this rank's devices from checkpoint rd's model and
// its device first's optimizer state (a run resumed on other devices).
func (j job) restoreResized(rd *checkpoint.Reader, st *engineState, first int) error {
	return j.x.restoreResized(rd, st, first)
}
