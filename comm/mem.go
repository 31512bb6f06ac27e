package comm

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Mem returns a world of n ranks that live in this process, one Comm per
// rank, each to be used by its own goroutine(s). Collectives meet in memory
// and add the ranks' vectors in rank order, so every rank gets the same
// bits; sends are buffered copies. It is the transport of the in-process
// engine (Self) and lets the distributed engine and the conformance suite
// run with no MPI at all.
func Mem(n int) []Comm {
	if n < 1 {
		panic("comm: Mem needs at least one rank")
	}
	w := &memWorld{boxes: make([][]memMsg, n)}
	w.cond = sync.NewCond(&w.mu)
	g := w.newGroup(seq(n))
	out := make([]Comm, n)
	for i := range out {
		out[i] = &memComm{g: g, rank: i}
	}
	return out
}

// Self returns a world of one rank: every collective leaves its vector as
// it is (AllGather copies it).
func Self() Comm { return Mem(1)[0] }

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

type memWorld struct {
	mu     sync.Mutex
	cond   *sync.Cond
	boxes  [][]memMsg // pending messages per world rank
	groups int
	closes int  // world ranks that have closed
	closed bool // every world rank has closed
}

type memMsg struct {
	group, src, tag int
	data            []byte
}

type memGroup struct {
	id    int
	w     *memWorld
	ranks []int // world rank of each member
	ops   map[int64]*memOp
}

func (w *memWorld) newGroup(ranks []int) *memGroup {
	w.groups++
	return &memGroup{id: w.groups, w: w, ranks: ranks, ops: map[int64]*memOp{}}
}

type opKind uint8

const (
	opAllReduce opKind = iota
	opReduce
	opBroadcast
	opAllGather
	opSplit
	opBarrier
)

func (k opKind) String() string {
	return [...]string{"AllReduce", "Reduce", "Broadcast", "AllGather", "Split", "Barrier"}[k]
}

// memOp is one collective: the k-th collective call of every member.
type memOp struct {
	kind     opKind
	root     int
	arrived  int
	f32      [][]float32
	f64      [][]float64
	keys     [][2]int
	result   []float32
	result64 []float64
	split    []Comm
	err      error
	done     bool
	left     int // members yet to collect the result
	seq      int64
}

type memComm struct {
	g      *memGroup
	rank   int
	seq    int64 // collectives this member has joined
	closed bool
}

func (c *memComm) Rank() int { return c.rank }
func (c *memComm) Size() int { return len(c.g.ranks) }

var errClosed = errors.New("comm: the world is closed")

// join enters this member into its next collective and, as the last one to
// arrive, computes it. The world's lock is held.
func (c *memComm) join(kind opKind, root int, f32 []float32, f64 []float64, key [2]int) (*memOp, error) {
	w := c.g.w
	if w.closed {
		return nil, errClosed
	}
	n := c.Size()
	op := c.g.ops[c.seq]
	if op == nil {
		op = &memOp{kind: kind, root: root, f32: make([][]float32, n), f64: make([][]float64, n), keys: make([][2]int, n), left: n, seq: c.seq}
		c.g.ops[c.seq] = op
	}
	c.seq++
	if op.kind != kind || op.root != root {
		op.err = fmt.Errorf("comm: collective mismatch: rank %d called %s (root %d) where another rank called %s (root %d)", c.rank, kind, root, op.kind, op.root)
	}
	op.f32[c.rank], op.f64[c.rank], op.keys[c.rank] = f32, f64, key
	if op.arrived++; op.arrived == n {
		if op.err == nil {
			op.err = c.g.compute(op)
		}
		op.done = true
		w.cond.Broadcast()
	}
	return op, nil
}

// compute performs a collective once every member has arrived.
func (g *memGroup) compute(op *memOp) error {
	switch op.kind {
	case opAllReduce, opReduce:
		size := len(op.f32[0])
		op.result = slices.Clone(op.f32[0])
		for r, x := range op.f32[1:] {
			if len(x) != size {
				return fmt.Errorf("comm: %s of %d values on rank 0 and %d on rank %d", op.kind, size, len(x), r+1)
			}
			for i, v := range x {
				op.result[i] += v
			}
		}
	case opBroadcast:
		op.result = slices.Clone(op.f32[op.root])
		for r, x := range op.f32 {
			if len(x) != len(op.result) {
				return fmt.Errorf("comm: Broadcast of %d values from the root, %d on rank %d", len(op.result), len(x), r)
			}
		}
	case opAllGather:
		for r, x := range op.f64 {
			if len(x) != len(op.f64[0]) {
				return fmt.Errorf("comm: AllGather of %d values on rank 0 and %d on rank %d", len(op.f64[0]), len(x), r)
			}
			op.result64 = append(op.result64, x...)
		}
	case opSplit:
		op.split = make([]Comm, len(op.keys))
		colors := map[int][]int{}
		for r, k := range op.keys {
			if k[0] >= 0 {
				colors[k[0]] = append(colors[k[0]], r)
			}
		}
		for _, members := range colors {
			slices.SortStableFunc(members, func(a, b int) int { return op.keys[a][1] - op.keys[b][1] })
			ranks := make([]int, len(members))
			for i, m := range members {
				ranks[i] = g.ranks[m]
			}
			ng := g.w.newGroup(ranks)
			for i, m := range members {
				op.split[m] = &memComm{g: ng, rank: i}
			}
		}
	}
	return nil
}

// collect waits for op to complete and takes this member's part of it.
func (c *memComm) collect(op *memOp, f32 []float32, f64 []float64) (Comm, error) {
	w := c.g.w
	for !op.done && !w.closed {
		w.cond.Wait()
	}
	if !op.done {
		return nil, errClosed
	}
	var out Comm
	if op.err == nil {
		switch op.kind {
		case opAllReduce, opBroadcast:
			copy(f32, op.result)
		case opReduce:
			if c.rank == op.root {
				copy(f32, op.result)
			}
		case opAllGather:
			if len(f64) != len(op.result64) {
				op.err = fmt.Errorf("comm: AllGather into %d values, want %d", len(f64), len(op.result64))
			} else {
				copy(f64, op.result64)
			}
		case opSplit:
			out = op.split[c.rank]
		}
	}
	if op.left--; op.left == 0 {
		delete(c.g.ops, op.seq)
	}
	return out, op.err
}

// blocking runs a collective to completion.
func (c *memComm) blocking(kind opKind, root int, f32 []float32, f64in, f64out []float64, key [2]int) (Comm, error) {
	w := c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	op, err := c.join(kind, root, f32, f64in, key)
	if err != nil {
		return nil, err
	}
	// The root of a broadcast keeps its vector until everyone has copied it.
	out, err := c.collect(op, f32, f64out)
	if kind == opBroadcast && c.rank == root {
		for op.left > 0 && !w.closed {
			w.cond.Wait()
		}
	}
	w.cond.Broadcast()
	return out, err
}

func (c *memComm) AllReduce(x []float32) error {
	_, err := c.blocking(opAllReduce, 0, x, nil, nil, [2]int{})
	return err
}

func (c *memComm) Reduce(x []float32, root int) error {
	if err := checkRoot(c, root); err != nil {
		return err
	}
	_, err := c.blocking(opReduce, root, x, nil, nil, [2]int{})
	return err
}

func (c *memComm) Broadcast(x []float32, root int) error {
	if err := checkRoot(c, root); err != nil {
		return err
	}
	_, err := c.blocking(opBroadcast, root, x, nil, nil, [2]int{})
	return err
}

func (c *memComm) AllGather(dst, x []float64) error {
	_, err := c.blocking(opAllGather, 0, nil, x, dst, [2]int{})
	return err
}

func (c *memComm) Split(color, key int) (Comm, error) {
	return c.blocking(opSplit, 0, nil, nil, nil, [2]int{color, key})
}

func (c *memComm) Barrier() error {
	_, err := c.blocking(opBarrier, 0, nil, nil, nil, [2]int{})
	return err
}

func (c *memComm) IAllReduce(x []float32) (Request, error) {
	w := c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	op, err := c.join(opAllReduce, 0, x, nil, [2]int{})
	if err != nil {
		return nil, err
	}
	return &memRequest{c: c, op: op, x: x}, nil
}

type memRequest struct {
	c       *memComm
	op      *memOp
	x       []float32
	taken   bool
	takeErr error
}

func (r *memRequest) Test() (bool, error) {
	w := r.c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.taken {
		return true, r.takeErr
	}
	if !r.op.done && !w.closed {
		return false, nil
	}
	_, r.takeErr = r.c.collect(r.op, r.x, nil)
	r.taken = true
	w.cond.Broadcast()
	return true, r.takeErr
}

func (r *memRequest) Wait() error {
	w := r.c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.taken {
		return r.takeErr
	}
	_, r.takeErr = r.c.collect(r.op, r.x, nil)
	r.taken = true
	w.cond.Broadcast()
	return r.takeErr
}

func (c *memComm) Send(to, tag int, b []byte) error {
	if to < 0 || to >= c.Size() || tag < 0 {
		return fmt.Errorf("comm: Send to rank %d with tag %d in a group of %d", to, tag, c.Size())
	}
	w := c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	dst := c.g.ranks[to]
	w.boxes[dst] = append(w.boxes[dst], memMsg{group: c.g.id, src: c.rank, tag: tag, data: slices.Clone(b)})
	w.cond.Broadcast()
	return nil
}

func (c *memComm) Recv(from, tag int, b []byte) (Status, error) {
	w := c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	me := c.g.ranks[c.rank]
	for {
		for i, m := range w.boxes[me] {
			if m.group != c.g.id || (from != AnySource && m.src != from) || (tag != AnyTag && m.tag != tag) {
				continue
			}
			w.boxes[me] = slices.Delete(w.boxes[me], i, i+1)
			st := Status{Source: m.src, Tag: m.tag, Bytes: len(m.data)}
			if len(m.data) > len(b) {
				return st, fmt.Errorf("%w: %d bytes from rank %d into %d", ErrTruncated, len(m.data), m.src, len(b))
			}
			copy(b, m.data)
			return st, nil
		}
		if w.closed {
			return Status{}, errClosed
		}
		w.cond.Wait()
	}
}

// Close of a world rank counts it out; once every rank has closed, as after
// MPI_Finalize, the world is gone and calls return an error. Closing a group
// made by Split does nothing.
func (c *memComm) Close() error {
	w := c.g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.g.id == 1 && !c.closed {
		c.closed = true
		if w.closes++; w.closes == len(c.g.ranks) {
			w.closed = true
			w.cond.Broadcast()
		}
	}
	return nil
}
