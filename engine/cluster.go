package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/strategy"
)

// A distributed run: rank 0 drives and holds devices 0…K−1; rank r holds
// devices rK…rK+K−1 and serves the commands rank 0 sends it. Messages:
//
//	tagCmd      0 → r  a command (below)
//	tagPayload  0 → r  θ for a pull, or for a commit whose op needs it
//	tagDone     r → 0  a device finished its batch (device, loss)
//	tagUpdate   r → 0  a commit's statistic, then tagUpdateVec its update vector
//	tagPayload  0 → r  after a commit whose op restarts the worker, θ
//	tagState    r → 0  a device's books for a checkpoint (gob)
//	tagVector   r → 0  one of a device's vectors for a checkpoint
//
// Collectives (all-reduce, an op's collective or query) are a command to
// every rank followed by the collective on the world (Layered SGD's: on its
// nodes' and their communicators' groups), in which rank 0's executor takes
// part like any other. After a transport error the job ends: the world is
// not reused. Commits go through rank 0, which holds θ: it sends the
// device's rank the commit (and θ, when the commit's op needs it), and adds
// the update that comes back. Both sides run the same binary (see
// agreeSettings and the tool's own check), so the encoding needs no version.
const (
	tagCmd = iota + 1
	tagPayload
	tagDone
	tagUpdate
	tagUpdateVec
	tagState
	tagVector
)

// maxStateBytes bounds a device's books on the wire: its random streams'
// states and a few numbers, a few hundred bytes.
const maxStateBytes = 1 << 16

type cmdKind uint8

const (
	cmdDispatch cmdKind = iota + 1
	cmdAllReduce
	cmdCollective
	cmdQuery
	cmdCommit
	cmdStop
	cmdSnapshot // a checkpoint: send the devices' books (weights: 1 for a device computing a batch)
	cmdVectors  // a checkpoint: send the devices' vectors, books as in the snapshot before
	cmdFault    // a rank's fault: kind in w.mode's byte (below), factor in params[0], timeout in params[1]
	cmdLeave    // device w.dev left the run (a device's fault): leave it out of the collectives
	cmdSlow     // device w.dev goes params[0] times slower (a device's fault)
	cmdHurry    // the run is stopping: skip the slow-downs and simulated decoding (hurryDevices)
)

// command is what rank 0 asks of a rank: a batch (w), an all-reduce (lr,
// weights, layered, and next: the rank's batches to prepare during a
// layered all-reduce), an op's collective or query (op, lr, weights,
// params) or a commit (w.dev, op, lr, tau, params).
type command struct {
	kind    cmdKind
	w       work
	layered bool
	lr      float64
	op      string
	params  [strategy.MaxParams]float64
	tau     int
	weights []float64
	next    []work
}

// A command's flags, byte 1 of its header.
const flagLayered = 1

// The header: kind, flags, mode, the op name's length; device, rows, tau;
// position; rate; params; the numbers of weights and of batches; the op's
// name.
const (
	opAt      = 40 + 8*strategy.MaxParams
	cmdHeader = opAt + strategy.MaxOpName
	workBytes = 32
	doneBytes = 16
)

func cmdSize(devices, perRank int) int { return cmdHeader + 8*devices + workBytes*perRank }

// encode writes c into b, which cmdSize sized, and returns the bytes used.
func (c *command) encode(b []byte) []byte {
	le := binary.LittleEndian
	b[0], b[2], b[3] = byte(c.kind), byte(c.w.mode), byte(len(c.op))
	b[1] = 0 // flags
	if c.layered {
		b[1] |= flagLayered
	}
	le.PutUint32(b[4:], uint32(int32(c.w.dev)))
	le.PutUint32(b[8:], uint32(int32(c.w.rows)))
	le.PutUint32(b[12:], uint32(int32(c.tau)))
	le.PutUint64(b[16:], uint64(c.w.pos))
	lr := c.lr
	if c.kind == cmdDispatch {
		lr = c.w.lr
	}
	le.PutUint64(b[24:], math.Float64bits(lr))
	for i, v := range c.params {
		le.PutUint64(b[32+8*i:], math.Float64bits(v))
	}
	le.PutUint32(b[opAt-8:], uint32(len(c.weights)))
	le.PutUint32(b[opAt-4:], uint32(len(c.next)))
	copy(b[opAt:cmdHeader], c.op)
	o := cmdHeader
	for _, v := range c.weights {
		le.PutUint64(b[o:], math.Float64bits(v))
		o += 8
	}
	for _, w := range c.next {
		le.PutUint32(b[o:], uint32(int32(w.dev)))
		le.PutUint32(b[o+4:], uint32(int32(w.rows)))
		le.PutUint64(b[o+8:], uint64(w.pos))
		le.PutUint64(b[o+16:], math.Float64bits(w.lr))
		b[o+24] = byte(w.mode)
		o += workBytes
	}
	return b[:o]
}

// decode reads c from b, reusing c's slices (and its op's name, when the
// same: no allocation).
func (c *command) decode(b []byte) error {
	if len(b) < cmdHeader {
		return fmt.Errorf("engine: a command of %d bytes", len(b))
	}
	le := binary.LittleEndian
	f := func(o int) float64 { return math.Float64frombits(le.Uint64(b[o:])) }
	c.kind, c.w.mode = cmdKind(b[0]), strategy.Mode(b[2])
	c.layered = b[1]&flagLayered != 0
	if n := int(b[3]); n > strategy.MaxOpName {
		return fmt.Errorf("engine: a command with an op's name of %d bytes", n)
	} else if name := b[opAt : opAt+n]; string(name) != c.op {
		c.op = string(name)
	}
	c.w.dev = int(int32(le.Uint32(b[4:])))
	c.w.rows = int(int32(le.Uint32(b[8:])))
	c.tau = int(int32(le.Uint32(b[12:])))
	c.w.pos = int64(le.Uint64(b[16:]))
	c.lr = f(24)
	for i := range c.params {
		c.params[i] = f(32 + 8*i)
	}
	c.w.lr = c.lr
	nw, nn := int(le.Uint32(b[opAt-8:])), int(le.Uint32(b[opAt-4:]))
	if len(b) != cmdHeader+8*nw+workBytes*nn {
		return fmt.Errorf("engine: a command of %d bytes for %d weights and %d batches", len(b), nw, nn)
	}
	c.weights, c.next = c.weights[:0], c.next[:0]
	o := cmdHeader
	for range nw {
		c.weights = append(c.weights, f(o))
		o += 8
	}
	for range nn {
		c.next = append(c.next, work{dev: int(int32(le.Uint32(b[o:]))), rows: int(int32(le.Uint32(b[o+4:]))),
			pos: int64(le.Uint64(b[o+8:])), lr: f(o + 16), mode: strategy.Mode(b[o+24])})
		o += workBytes
	}
	return nil
}

// action returns the action of kind a command of an op carries.
func (c *command) action(kind strategy.ActionKind) strategy.Action {
	return strategy.Action{Kind: kind, Device: c.w.dev, LR: c.lr, Weights: c.weights, Op: c.op, Params: c.params, Tau: c.tau}
}

// opCommand returns the command that carries action a of an op.
func opCommand(kind cmdKind, a *strategy.Action) command {
	return command{kind: kind, w: work{dev: a.Device}, lr: a.LR, weights: a.Weights, op: a.Op, params: a.Params, tau: a.Tau}
}

// cluster is a rank's messaging with the others, with its buffers sized once.
type cluster struct {
	world comm.Comm
	k     int // devices per rank
	buf   []byte
	share []work
	small []byte // 8 bytes; slices, not arrays in the struct: cgo checks a whole object for Go pointers
	// received is closed when receive returns.
	received chan struct{}
}

func newCluster(world comm.Comm, devices int) *cluster {
	k := devices / world.Size()
	return &cluster{world: world, k: k, buf: make([]byte, cmdSize(devices, k)), share: make([]work, 0, k), small: make([]byte, 8),
		received: make(chan struct{})}
}

// owner returns the rank holding device d.
func (cl *cluster) owner(d int) int { return d / cl.k }

// mine returns the batches of next that rank holds.
func (cl *cluster) mine(rank int, next []work) []work {
	cl.share = cl.share[:0]
	for _, w := range next {
		if cl.owner(w.dev) == rank {
			cl.share = append(cl.share, w)
		}
	}
	return cl.share
}

// broadcast sends c to every other rank.
func (cl *cluster) broadcast(c *command) error { return cl.broadcastWith(c, nil) }

// broadcastWith sends c to every other rank, each with its share of next.
func (cl *cluster) broadcastWith(c *command, next []work) error {
	for r := 1; r < cl.world.Size(); r++ {
		c.next = cl.mine(r, next)
		if err := cl.world.Send(r, tagCmd, c.encode(cl.buf)); err != nil {
			return fmt.Errorf("engine: sending %s to rank %d: %w", c.kind, r, err)
		}
	}
	c.next = nil
	return nil
}

// dispatch sends a batch to its device's rank, with θ for a pull.
func (cl *cluster) dispatch(w work, theta []float32) error {
	c := command{kind: cmdDispatch, w: w}
	to := cl.owner(w.dev)
	if err := cl.world.Send(to, tagCmd, c.encode(cl.buf)); err != nil {
		return fmt.Errorf("engine: sending device %d its batch: %w", w.dev, err)
	}
	if w.mode == strategy.Pull && theta != nil {
		if err := cl.world.Send(to, tagPayload, comm.Bytes(theta)); err != nil {
			return fmt.Errorf("engine: sending device %d the centre model: %w", w.dev, err)
		}
	}
	return nil
}

// commit asks a device's rank for its update (sending θ when the commit's
// op needs it), has the op apply it to θ (h's centre), sends the worker θ
// when the op restarts it, and returns the op's statistic.
func (cl *cluster) commit(a *strategy.Action, op strategy.Committer, h strategy.Host) (float64, error) {
	theta, scratch := h.Center(), h.Scratch()
	c := opCommand(cmdCommit, a)
	from := cl.owner(a.Device)
	if err := cl.world.Send(from, tagCmd, c.encode(cl.buf)); err != nil {
		return 0, fmt.Errorf("engine: asking device %d for its commit: %w", a.Device, err)
	}
	if op.NeedsCenter(a) {
		if err := cl.world.Send(from, tagPayload, comm.Bytes(theta)); err != nil {
			return 0, fmt.Errorf("engine: sending device %d the centre model: %w", a.Device, err)
		}
	}
	if _, err := cl.world.Recv(from, tagUpdate, cl.small); err != nil {
		return 0, fmt.Errorf("engine: receiving device %d's commit: %w", a.Device, err)
	}
	if _, err := cl.world.Recv(from, tagUpdateVec, comm.Bytes(scratch)); err != nil {
		return 0, fmt.Errorf("engine: receiving device %d's update: %w", a.Device, err)
	}
	op.Apply(h, a, scratch)
	if _, ok := op.(strategy.Restarter); ok {
		if err := cl.world.Send(from, tagPayload, comm.Bytes(theta)); err != nil {
			return 0, fmt.Errorf("engine: sending device %d the centre its commit made: %w", a.Device, err)
		}
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(cl.small)), nil
}

// receive forwards the other ranks' finished batches to done until quit.
func (cl *cluster) receive(done chan<- doneMsg) {
	defer close(cl.received)
	var b [doneBytes]byte
	for {
		st, err := cl.world.Recv(comm.AnySource, tagDone, b[:])
		if err != nil {
			panic(fmt.Sprintf("engine: receiving finished batches: %v", err))
		}
		dev := int(int32(binary.LittleEndian.Uint32(b[:])))
		if dev < 0 && st.Source == 0 {
			return
		}
		done <- doneMsg{dev: dev, loss: math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))}
	}
}

// quit ends receive and waits until it has: a receiver outliving its run
// would take the next run's messages on the same world.
func (cl *cluster) quit() {
	var b [doneBytes]byte
	binary.LittleEndian.PutUint32(b[:], uint32(0xffffffff))
	if err := cl.world.Send(0, tagDone, b[:]); err != nil {
		panic(fmt.Sprintf("engine: stopping the receiver of finished batches: %v", err))
	}
	<-cl.received
}

// snapshot asks every other rank for its devices' books, for a checkpoint
// (working marks the devices computing a batch), and returns them by
// device.
func (cl *cluster) snapshot(working []bool) (map[int]deviceState, error) {
	c := command{kind: cmdSnapshot, weights: make([]float64, len(working))}
	for i, w := range working {
		if w {
			c.weights[i] = 1
		}
	}
	if err := cl.broadcast(&c); err != nil {
		return nil, err
	}
	out := map[int]deviceState{}
	buf := make([]byte, maxStateBytes)
	for r := 1; r < cl.world.Size(); r++ {
		for i := range cl.k {
			st, err := cl.world.Recv(r, tagState, buf)
			if err != nil {
				return nil, fmt.Errorf("engine: checkpoint: receiving device %d's books from rank %d: %w", r*cl.k+i, r, err)
			}
			var ds deviceState
			if err := gob.NewDecoder(bytes.NewReader(buf[:st.Bytes])).Decode(&ds); err != nil {
				return nil, fmt.Errorf("engine: checkpoint: device %d's books from rank %d: %w", r*cl.k+i, r, err)
			}
			out[r*cl.k+i] = ds
		}
	}
	return out, nil
}

// askVectors asks rank for its devices' vectors, as its last snapshot's
// books list them.
func (cl *cluster) askVectors(rank int) error {
	c := command{kind: cmdVectors}
	if err := cl.world.Send(rank, tagCmd, c.encode(cl.buf)); err != nil {
		return fmt.Errorf("engine: checkpoint: asking rank %d for its devices' vectors: %w", rank, err)
	}
	return nil
}

// recvVector receives the next of rank's vectors into v.
func (cl *cluster) recvVector(rank int, v []float32) error {
	st, err := cl.world.Recv(rank, tagVector, comm.Bytes(v))
	if err == nil && st.Bytes != 4*len(v) {
		err = fmt.Errorf("%d bytes from rank %d, want %d", st.Bytes, rank, 4*len(v))
	}
	return err
}

// sendSnapshot is a rank's side of cmdSnapshot: its devices' books, kept
// for the cmdVectors that follows.
func (x *executor) sendSnapshot(c *command) error {
	x.snap = x.snap[:0]
	for _, d := range x.devs {
		ds, err := d.snapshot(c.weights[d.id] == 1, x.members.gone(d.id))
		if err != nil {
			return err
		}
		x.snap = append(x.snap, ds)
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(ds); err != nil {
			return fmt.Errorf("engine: rank %d: encoding device %d's books: %w", x.world.Rank(), d.id, err)
		}
		if err := x.world.Send(0, tagState, b.Bytes()); err != nil {
			return fmt.Errorf("engine: rank %d: sending device %d's books: %w", x.world.Rank(), d.id, err)
		}
	}
	return nil
}

// sendVectors is a rank's side of cmdVectors.
func (x *executor) sendVectors() error {
	if len(x.snap) != len(x.devs) {
		return fmt.Errorf("engine: rank %d: asked for its devices' vectors without a snapshot", x.world.Rank())
	}
	for i, d := range x.devs {
		if x.members.gone(d.id) {
			continue
		}
		for _, v := range d.vectors(x.snap[i]) {
			if err := x.world.Send(0, tagVector, comm.Bytes(v)); err != nil {
				return fmt.Errorf("engine: rank %d: sending device %d's vectors: %w", x.world.Rank(), d.id, err)
			}
		}
	}
	return nil
}

// faultKinds numbers the kinds of fault a cmdFault carries.
var faultKinds = []FaultKind{Crash, Stall, Slow}

// strike sends rank fault f to its rank.
func (cl *cluster) strike(f Fault) error {
	kind := slices.Index(faultKinds, f.Kind)
	c := command{kind: cmdFault, w: work{mode: strategy.Mode(kind)}, params: [strategy.MaxParams]float64{f.Factor, f.Timeout}}
	if err := cl.world.Send(f.Rank, tagCmd, c.encode(cl.buf)); err != nil {
		return fmt.Errorf("engine: sending rank %d its fault: %w", f.Rank, err)
	}
	return nil
}

// leave tells every other rank that device d left the run.
func (cl *cluster) leave(d int) error { return cl.broadcast(&command{kind: cmdLeave, w: work{dev: d}}) }

// slow tells device d's rank that it goes factor times slower.
func (cl *cluster) slow(d int, factor float64) error {
	c := command{kind: cmdSlow, w: work{dev: d}, params: [strategy.MaxParams]float64{factor}}
	if err := cl.world.Send(cl.owner(d), tagCmd, c.encode(cl.buf)); err != nil {
		return fmt.Errorf("engine: slowing device %d: %w", d, err)
	}
	return nil
}

// hurry tells the other ranks that the run is stopping.
func (cl *cluster) hurry() error { return cl.broadcast(&command{kind: cmdHurry}) }

// stop ends the other ranks' serve loops.
func (cl *cluster) stop() error { return cl.broadcast(&command{kind: cmdStop}) }

// serve is a rank's life other than rank 0's: it carries out rank 0's
// commands on its devices until told to stop.
func serve(x *executor) error {
	defer x.close()
	cl := newCluster(x.world, x.n)
	for _, d := range x.devs {
		d.msg = make([]byte, doneBytes)
	}
	x.startDevices(func(d *device) {
		// Each device's goroutine has its own buffer.
		b := d.msg
		binary.LittleEndian.PutUint32(b, uint32(int32(d.id)))
		binary.LittleEndian.PutUint64(b[8:], math.Float64bits(d.loss))
		if err := x.world.Send(0, tagDone, b); err != nil {
			// The job cannot go on without this message; ending the process
			// makes mpirun end the others.
			panic(fmt.Sprintf("engine: rank %d: reporting device %d's batch: %v", x.world.Rank(), d.id, err))
		}
	})
	defer x.stopDevices()
	var c command
	c.weights, c.next = make([]float64, 0, x.n), make([]work, 0, len(x.devs))
	for {
		st, err := x.world.Recv(0, tagCmd, cl.buf)
		if err != nil {
			return fmt.Errorf("engine: rank %d: receiving a command: %w", x.world.Rank(), err)
		}
		if err := c.decode(cl.buf[:st.Bytes]); err != nil {
			return err
		}
		switch c.kind {
		case cmdStop:
			return nil
		case cmdDispatch:
			d := x.local(c.w.dev)
			if d == nil {
				return fmt.Errorf("engine: rank %d was sent device %d's batch", x.world.Rank(), c.w.dev)
			}
			x.load(d, c.w)
			if c.w.mode == strategy.Pull && !x.cfg.TimingOnly {
				if _, err := x.world.Recv(0, tagPayload, comm.Bytes(d.p)); err != nil {
					return fmt.Errorf("engine: rank %d: pulling the centre model: %w", x.world.Rank(), err)
				}
			}
			x.run(d)
		case cmdCommit:
			if err := x.commitRemote(&c, cl); err != nil {
				return err
			}
		case cmdQuery:
			_, _, err = x.query(&c)
		case cmdFault:
			if k := int(c.w.mode); k >= 0 && k < len(faultKinds) {
				// A stall stops this loop, as a hung machine stops answering.
				x.strikeRank(Fault{Kind: faultKinds[k], Factor: c.params[0], Timeout: c.params[1]})
			}
		case cmdLeave:
			x.members.leave(c.w.dev)
		case cmdSlow:
			if d := x.local(c.w.dev); d != nil {
				d.slowDown(c.params[0])
			}
		case cmdHurry:
			x.hurryDevices()
		case cmdSnapshot:
			err = x.sendSnapshot(&c)
		case cmdVectors:
			err = x.sendVectors()
		case cmdAllReduce, cmdCollective:
			err = x.collective(&c)
		default:
			err = fmt.Errorf("engine: rank %d: unknown command %d", x.world.Rank(), c.kind)
		}
		if err != nil {
			return err
		}
	}
}

// commitRemote is the worker's side of a commit: receive θ (when the op
// needs it), turn the gradient into the update, send the op's statistic and
// the update to rank 0.
func (x *executor) commitRemote(c *command, cl *cluster) error {
	d := x.local(c.w.dev)
	if d == nil {
		return fmt.Errorf("engine: rank %d was asked for device %d's commit", x.world.Rank(), c.w.dev)
	}
	x.act = c.action(strategy.Commit)
	a := &x.act
	op, err := x.committer(a.Op)
	if err != nil {
		return err
	}
	var theta []float32
	if op.NeedsCenter(a) {
		theta = x.scratch
		if _, err := x.world.Recv(0, tagPayload, comm.Bytes(theta)); err != nil {
			return fmt.Errorf("engine: rank %d: receiving the centre model: %w", x.world.Rank(), err)
		}
	}
	pi, err := x.update(d, a, theta)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(cl.small, math.Float64bits(pi))
	if err := x.world.Send(0, tagUpdate, cl.small); err != nil {
		return fmt.Errorf("engine: rank %d: sending device %d's commit: %w", x.world.Rank(), d.id, err)
	}
	if err := x.world.Send(0, tagUpdateVec, comm.Bytes(d.g)); err != nil {
		return fmt.Errorf("engine: rank %d: sending device %d's update: %w", x.world.Rank(), d.id, err)
	}
	if rs, ok := op.(strategy.Restarter); ok {
		if _, err := x.world.Recv(0, tagPayload, comm.Bytes(x.scratch)); err != nil {
			return fmt.Errorf("engine: rank %d: receiving the centre device %d's commit made: %w", x.world.Rank(), d.id, err)
		}
		rs.Restart(x, d, a, x.scratch)
	}
	return nil
}

func (k cmdKind) String() string {
	if k < cmdDispatch || k > cmdHurry {
		return fmt.Sprintf("command %d", k)
	}
	return [...]string{"dispatch", "all-reduce", "collective", "query", "commit", "stop", "snapshot", "vectors", "fault", "leave", "slow", "hurry"}[k-1]
}

// agreeSettings checks that every rank runs with the same engine settings
// and the same workload's shape, before any work: a rank that differs would
// otherwise compute something else, or wait forever.
func agreeSettings(world comm.Comm, cfg Config, w Workload) error {
	b, err := json.Marshal(struct {
		Config
		Workload       string
		Points, Params int
	}{Config: cfg, Workload: workloadKind(w), Points: w.Size(), Params: w.NumParams()})
	if err != nil {
		return fmt.Errorf("engine: encoding the settings: %w", err)
	}
	return comm.Agree(world, []comm.Fingerprint{{Name: "engine settings", Sum: sha256.Sum256(b)}})
}
