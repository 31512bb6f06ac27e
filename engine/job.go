package engine

import "github.com/hetsgd/hetsgd/strategy"

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
