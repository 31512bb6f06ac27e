package engine

import (
	"fmt"

	"github.com/hetsgd/hetsgd/checkpoint"
	"github.com/hetsgd/hetsgd/strategy"
)

// job is the run's devices as the driver commands them. Each method is
// one command, carried out wherever the devices it concerns are, and
// returns its result; the driver, the clocks, the faults and the
// checkpoint reach the devices through it rather than asking which rank
// holds what, and read no executor's field. execJob is the CPU executors';
// the driver's tests run it against a fake (driver_test.go).
type job interface {
	// Batches and collectives: dispatch starts a batch on its device,
	// collective runs an all-reduce or an op's collective on every rank
	// (next: the batches that start once it is done), query an op's
	// measurement, commit a device's update to the centre.
	dispatch(w work) error
	collective(c *command, next []work) error
	query(c *command) (values, second []float64, err error)
	commit(a *strategy.Action) (float64, error)
	// Faults and membership.
	slow(d int, factor float64) error
	leave(d int) error
	strikeRank(f Fault) error
	live() int
	distributed() bool
	op(name string) (strategy.Op, error)
	// The virtual clock's: run a batch at once and account for it, prepare
	// the next batches during a collective, what the last all-reduce
	// updated, a batch's loss.
	runNow(w work, compute bool, sigma float64) batchRun
	prepareNext(prep float64) float64
	applied() int64
	lastLoss(dev int) float64
	// The model the run evaluates, and Layered SGD's timing.
	evaluated(replica bool) ([]float32, string)
	layered() (LayeredTiming, bool)
	// The real clock's devices: start their goroutines, reporting on done;
	// hurry them at a stop (hurryAll: on every rank); stop them.
	start(done chan<- doneMsg)
	hurry()
	hurryAll() error
	stopDevices()
	// The end: stop the other ranks, release the devices; serve is a rank
	// other than 0's whole run.
	stop() error
	close()
	serve() error
	// Checkpoints: the devices' books and vectors, and back.
	books(working []bool) ([]deviceState, error)
	writeVectors(w *checkpoint.Writer, books []deviceState) error
	hasCentreState() bool
	hasPending() bool
	restore(rd *checkpoint.Reader, st *engineState) error
	restoreResized(rd *checkpoint.Reader, st *engineState, first int) error
}

// execJob is the job of this rank's executor and, in a distributed run,
// the other ranks' through the cluster.
type execJob struct {
	x  *executor
	cl *cluster // the other ranks (nil in one process)
}

var _ job = execJob{}

// serve carries out rank 0's commands on a rank other than 0 until it
// ends the run.
func (j execJob) serve() error { return serve(j.x) }

// dispatch starts batch w on its device: loaded and started on its
// goroutine here (under Pull, θ copied first), or sent, with θ for a pull,
// to the device's rank.
func (j execJob) dispatch(w work) error {
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
func (j execJob) collective(c *command, next []work) error {
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
func (j execJob) query(c *command) (values, second []float64, err error) {
	if j.cl != nil {
		if err := j.cl.broadcast(c); err != nil {
			return nil, nil, err
		}
	}
	return j.x.query(c)
}

// commit applies device a.Device's update to the centre by the action's
// op, wherever the device is, and returns the op's statistic.
func (j execJob) commit(a *strategy.Action) (float64, error) {
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
func (j execJob) slow(d int, factor float64) error {
	if dev := j.x.local(d); dev != nil {
		dev.slowDown(factor)
		return nil
	}
	return j.cl.slow(d, factor)
}

// leave tells the other ranks that device d left the run (this rank's
// executor shares the driver's membership record): every executor leaves
// it out of its collectives, each counting the same devices live.
func (j execJob) leave(d int) error {
	if j.cl == nil {
		return nil
	}
	return j.cl.leave(d)
}

// strikeRank strikes rank fault f on its rank.
func (j execJob) strikeRank(f Fault) error {
	if f.Rank == 0 {
		j.x.strikeRank(f)
		return nil
	}
	return j.cl.strike(f)
}

// stop ends the other ranks' service.
func (j execJob) stop() error {
	if j.cl == nil {
		return nil
	}
	return j.cl.stop()
}

// distributed reports whether the job spans ranks.
func (j execJob) distributed() bool { return j.cl != nil }

// live is the number of devices still in the run.
func (j execJob) live() int { return j.x.live() }

// op returns the op named name, as every rank runs it.
func (j execJob) op(name string) (strategy.Op, error) { return j.x.op(name) }

// runNow runs batch w at once (the virtual clock, in one process) and
// returns its account for the clock to price.
func (j execJob) runNow(w work, compute bool, sigma float64) batchRun {
	return j.x.runNow(w, compute, sigma)
}

// prepareNext prepares every device's next batch during a collective
// (virtual clock) and returns how long the slowest takes.
func (j execJob) prepareNext(prep float64) float64 { return j.x.prepareNext(prep) }

// applied is the parameters the last all-reduce's update changed, 0 for
// every one (the same on every rank: the union of the rows is summed).
func (j execJob) applied() int64 { return j.x.applied }

// lastLoss is the mean loss of device dev's last batch run by runNow.
func (j execJob) lastLoss(dev int) float64 { return j.x.lastLoss(dev) }

// evaluated returns the model the run evaluates (replica: a replica's, not
// the centre's) and its name in a checkpoint.
func (j execJob) evaluated(replica bool) ([]float32, string) { return j.x.evaluated(replica) }

// layered is where rank 0's time went in layered all-reduces across ranks.
func (j execJob) layered() (LayeredTiming, bool) { return j.x.layeredTiming() }

// start starts the devices' goroutines (real clock): every finished batch,
// of this rank's devices or, through the cluster, of another rank's, is
// reported on done.
func (j execJob) start(done chan<- doneMsg) {
	j.x.startDevices(func(d *device) { done <- doneMsg{dev: d.id, loss: d.loss} })
	if j.cl != nil {
		go j.cl.receive(done)
	}
}

// hurry tells this rank's devices at work that the run is stopping (the
// other ranks' learn it from their own signal, or from hurryAll).
func (j execJob) hurry() { j.x.hurryDevices() }

// hurryAll tells the devices at work, wherever they are, that the run is
// stopping: for a stop that only rank 0 was told of.
func (j execJob) hurryAll() error {
	j.x.hurryDevices()
	if j.cl == nil {
		return nil
	}
	return j.cl.hurry()
}

// stopDevices stops this rank's goroutines and the receiving of the other
// ranks' reports.
func (j execJob) stopDevices() {
	j.x.stopDevices()
	if j.cl != nil {
		j.cl.quit()
	}
}

// close releases this rank's devices.
func (j execJob) close() { j.x.close() }

// books returns every device's books for a checkpoint, this rank's and the
// other ranks' (working: the devices whose goroutines are computing a
// batch).
func (j execJob) books(working []bool) ([]deviceState, error) {
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
func (j execJob) writeVectors(w *checkpoint.Writer, books []deviceState) error {
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
func (j execJob) hasCentreState() bool { return j.x.hasCentreState() }

// hasPending reports whether the ops keep sums of reductions in flight (a
// checkpoint says so, to read them back).
func (j execJob) hasPending() bool { return j.x.hasPending() }

// restore puts this rank's devices and centre in the state of checkpoint
// rd (every rank reads it).
func (j execJob) restore(rd *checkpoint.Reader, st *engineState) error { return j.x.restore(rd, st) }

// restoreResized starts this rank's devices from checkpoint rd's model and
// its device first's optimizer state (a run resumed on other devices).
func (j execJob) restoreResized(rd *checkpoint.Reader, st *engineState, first int) error {
	return j.x.restoreResized(rd, st, first)
}
