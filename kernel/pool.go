package kernel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Task is a unit of parallel work: Part(i, n) does the i-th of n parts. Parts
// must be independent of one another and of which goroutine runs them.
type Task interface {
	Part(i, n int)
}

// Pool runs the parts of Tasks on a fixed set of goroutines. The goroutine
// calling Run works too, claiming parts until none are left, so a Pool shared
// by several callers (one per simulated device, say) never leaves a caller
// idle while its own parts wait in a queue.
type Pool struct {
	workers int
	notes   chan note
	free    freeList[job]
}

// A job's state packs a generation (high 32 bits), the next unclaimed part
// and the number of parts (16 bits each). Workers are told of a job by a note
// carrying its generation; a note that arrives after its job finished fails
// to claim anything, so a job is reused as soon as its parts are done.
type job struct {
	t     Task
	state atomic.Uint64
	parts sync.WaitGroup
}

type note struct {
	j   *job
	gen uint32
}

// maxParts bounds the parts of one Run (they are counted in 16 bits).
const maxParts = 1<<16 - 1

// NewPool starts a pool that runs parts on up to workers goroutines, counting
// the caller of Run. workers < 1 means runtime.GOMAXPROCS(0).
func NewPool(workers int) *Pool {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &Pool{
		workers: workers,
		notes:   make(chan note, 64*workers),
		free:    newFreeList[job](64),
	}
	for i := 1; i < workers; i++ {
		go p.work()
	}
	return p
}

// Workers returns the number of goroutines that may run parts, the caller of
// Run included.
func (p *Pool) Workers() int { return p.workers }

func (p *Pool) work() {
	for nt := range p.notes {
		nt.j.drain(nt.gen)
	}
}

// drain runs parts of generation gen until none is left to claim.
func (j *job) drain(gen uint32) {
	for {
		s := j.state.Load()
		next, n := uint16(s>>16), uint16(s)
		if uint32(s>>32) != gen || next >= n {
			return
		}
		if j.state.CompareAndSwap(s, s+1<<16) {
			// The claim succeeded, so j cannot be reused before Done: reading
			// j.t is safe.
			j.t.Part(int(next), int(n))
			j.parts.Done()
		}
	}
}

// Run calls t.Part(i, n) for every i in [0, n) and returns when all have
// returned. Parts run concurrently on the pool's goroutines and the caller's.
// n must not exceed 65535.
func (p *Pool) Run(t Task, n int) {
	if n <= 0 {
		return
	}
	if n > maxParts {
		panic("kernel: Pool.Run with more than 65535 parts")
	}
	if n == 1 || p.workers == 1 {
		for i := 0; i < n; i++ {
			t.Part(i, n)
		}
		return
	}
	j := p.free.get()
	gen := uint32(j.state.Load()>>32) + 1
	j.t = t
	j.parts.Add(n)
	j.state.Store(uint64(gen)<<32 | uint64(n))
	for k := min(n, p.workers) - 1; k > 0; k-- {
		select {
		case p.notes <- note{j, gen}:
		default: // queue full: the caller does the work itself
		}
	}
	j.drain(gen)
	j.parts.Wait()
	j.t = nil
	p.free.put(j)
}

var (
	defaultMu   sync.RWMutex
	defaultPool = NewPool(0)
)

// Default returns the pool the package-level kernels use.
func Default() *Pool {
	defaultMu.RLock()
	defer defaultMu.RUnlock()
	return defaultPool
}

// SetThreads replaces the default pool by one with n workers (n < 1: one per
// CPU). The old pool's goroutines stay parked; call it at start-up, not in a
// loop.
func SetThreads(n int) {
	p := NewPool(n)
	defaultMu.Lock()
	defaultPool = p
	defaultMu.Unlock()
}

// freeList recycles scratch records between kernel calls. Unlike sync.Pool it
// never loses an item to a processor-local slot, so a warm kernel does not
// allocate at all.
type freeList[T any] struct{ ch chan *T }

func newFreeList[T any](n int) freeList[T] { return freeList[T]{ch: make(chan *T, n)} }

func (f freeList[T]) get() *T {
	select {
	case x := <-f.ch:
		return x
	default:
		return new(T)
	}
}

func (f freeList[T]) put(x *T) {
	select {
	case f.ch <- x:
	default:
	}
}
