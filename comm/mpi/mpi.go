//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

static MPI_Comm hs_world(void) { return MPI_COMM_WORLD; }
static int hs_init(int *provided) { return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided); }
static int hs_initialized(void) { int f = 0; MPI_Initialized(&f); return f; }
static int hs_finalized(void) { int f = 0; MPI_Finalized(&f); return f; }
static int hs_errors_return(MPI_Comm c) { return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); }
static int hs_rank(MPI_Comm c, int *r) { return MPI_Comm_rank(c, r); }
static int hs_size(MPI_Comm c, int *s) { return MPI_Comm_size(c, s); }
static int hs_allreduce(MPI_Comm c, float *x, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, c);
}
static int hs_iallreduce(MPI_Comm c, float *x, int n, MPI_Request *r) {
	return MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, c, r);
}
static int hs_reduce(MPI_Comm c, float *x, int n, int root, int me) {
	if (me == root) return MPI_Reduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, root, c);
	return MPI_Reduce(x, NULL, n, MPI_FLOAT, MPI_SUM, root, c);
}
static int hs_bcast(MPI_Comm c, float *x, int n, int root) { return MPI_Bcast(x, n, MPI_FLOAT, root, c); }
static int hs_allgather(MPI_Comm c, double *x, int n, double *dst) {
	return MPI_Allgather(x, n, MPI_DOUBLE, dst, n, MPI_DOUBLE, c);
}
static int hs_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
	return MPI_Comm_split(c, color < 0 ? MPI_UNDEFINED : color, key, out);
}
static int hs_is_null(MPI_Comm c) { return c == MPI_COMM_NULL; }
static int hs_barrier(MPI_Comm c) { return MPI_Barrier(c); }
static int hs_send(MPI_Comm c, void *b, int n, int to, int tag) { return MPI_Send(b, n, MPI_BYTE, to, tag, c); }
// hs_probe is MPI_Improbe's outcome, returned by value: results written
// through pointers to Go variables would make them escape, and Recv
// allocate for every message.
typedef struct { int err, flag, src, tag, count; MPI_Message msg; } hs_probe;
static hs_probe hs_improbe(MPI_Comm c, int from, int tag) {
	hs_probe p = {0};
	MPI_Status st;
	p.err = MPI_Improbe(from < 0 ? MPI_ANY_SOURCE : from, tag < 0 ? MPI_ANY_TAG : tag, c, &p.flag, &p.msg, &st);
	if (p.err != MPI_SUCCESS || !p.flag) return p;
	p.src = st.MPI_SOURCE;
	p.tag = st.MPI_TAG;
	p.err = MPI_Get_count(&st, MPI_BYTE, &p.count);
	return p;
}
static int hs_mrecv(void *b, int n, MPI_Message m) { return MPI_Mrecv(b, n, MPI_BYTE, &m, MPI_STATUS_IGNORE); }
static int hs_test(MPI_Request *r, int *flag) { return MPI_Test(r, flag, MPI_STATUS_IGNORE); }
static int hs_wait(MPI_Request *r) { return MPI_Wait(r, MPI_STATUS_IGNORE); }
static int hs_free(MPI_Comm *c) { return MPI_Comm_free(c); }
static int hs_finalize(void) { return MPI_Finalize(); }
static void hs_error_string(int code, char *buf, int *len) { MPI_Error_string(code, buf, len); }
static int hs_error_class(int code) { int c = code; MPI_Error_class(code, &c); return c; }
static int hs_tag_ub(void) {
	int *ub, flag = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
	return flag ? *ub : 32767;
}

// hs_time_allreduce times iters in-place all-reduces of n floats from C,
// for comparing the Go layer with OpenMPI's own call.
static double hs_time_allreduce(MPI_Comm c, float *x, int n, int iters) {
	MPI_Barrier(c);
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, c);
	return MPI_Wtime() - t0;
}

// hs_pingpong times iters round trips of n bytes between ranks a and b
// (blocking MPI_Send/MPI_Recv); other ranks return at once.
static double hs_pingpong(MPI_Comm c, int a, int b, void *buf, int n, int iters) {
	int me;
	MPI_Comm_rank(c, &me);
	if (me != a && me != b) return 0;
	int peer = me == a ? b : a;
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (me == a) {
			MPI_Send(buf, n, MPI_BYTE, peer, 77, c);
			MPI_Recv(buf, n, MPI_BYTE, peer, 77, c, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, n, MPI_BYTE, peer, 77, c, MPI_STATUS_IGNORE);
			MPI_Send(buf, n, MPI_BYTE, peer, 77, c);
		}
	}
	return MPI_Wtime() - t0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/hetsgd/hetsgd/comm"
)

func init() {
	comm.Register("mpi", func() (comm.Comm, error) { return Open() })
}

var (
	openMu sync.Mutex
	world  *Comm
	// mpiThread runs MPI_Init and MPI_Finalize, which MPI wants on one
	// thread: a goroutine locked to its own OS thread for the life of the
	// process. Locking the main goroutine instead would make every wake of
	// the engine's driver a thread handoff (13% slower training, measured).
	mpiThread chan func()
)

// onMPIThread runs f on the thread that initialised MPI.
func onMPIThread(f func()) {
	if mpiThread == nil {
		mpiThread = make(chan func())
		go func() {
			runtime.LockOSThread()
			for g := range mpiThread {
				g()
			}
		}()
	}
	done := make(chan struct{})
	mpiThread <- func() { f(); close(done) }
	<-done
}

// Open initialises MPI (once) and returns the world.
func Open() (*Comm, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if world != nil {
		return world, nil
	}
	if C.hs_finalized() != 0 {
		return nil, errors.New("mpi: the world was closed (MPI_Finalize) and cannot be opened again")
	}
	var provided, code C.int
	onMPIThread(func() { code = C.hs_init(&provided) })
	if code != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Init_thread", code)
	}
	if provided < C.MPI_THREAD_MULTIPLE {
		onMPIThread(func() { C.hs_finalize() })
		return nil, fmt.Errorf("mpi: this MPI library grants thread level %d, not MPI_THREAD_MULTIPLE", int(provided))
	}
	w := C.hs_world()
	if code := C.hs_errors_return(w); code != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_set_errhandler", code)
	}
	c, err := wrap(w, true)
	if err != nil {
		return nil, err
	}
	world = c
	return c, nil
}

// Comm is a communicator. It implements comm.Comm.
type Comm struct {
	c          C.MPI_Comm
	rank, size int
	world      bool
}

var _ comm.Comm = (*Comm)(nil)

func wrap(c C.MPI_Comm, isWorld bool) (*Comm, error) {
	var r, s C.int
	if code := C.hs_rank(c, &r); code != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_rank", code)
	}
	if code := C.hs_size(c, &s); code != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_size", code)
	}
	return &Comm{c: c, rank: int(r), size: int(s), world: isWorld}, nil
}

func (m *Comm) Rank() int { return m.rank }
func (m *Comm) Size() int { return m.size }

// nap sleeps d on this thread with its timer slack lowered to 1 µs (and
// left there: the threads that wait for messages keep it).
func nap(d time.Duration) {
	const prSetTimerSlack = 29
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1000, 0)
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}

// maxCount is the largest element count of one MPI call (its count is a C
// int); longer vectors are handled in pieces.
const maxCount = 1 << 30

func floats(x []float32) *C.float {
	if len(x) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&x[0]))
}

func (m *Comm) AllReduce(x []float32) error {
	for len(x) > 0 {
		n := min(len(x), maxCount)
		if code := C.hs_allreduce(m.c, floats(x), C.int(n)); code != C.MPI_SUCCESS {
			return mpiError("MPI_Allreduce", code)
		}
		x = x[n:]
	}
	return nil
}

func (m *Comm) Reduce(x []float32, root int) error {
	if root < 0 || root >= m.size {
		return fmt.Errorf("mpi: Reduce to root %d in a group of %d", root, m.size)
	}
	for len(x) > 0 {
		n := min(len(x), maxCount)
		if code := C.hs_reduce(m.c, floats(x), C.int(n), C.int(root), C.int(m.rank)); code != C.MPI_SUCCESS {
			return mpiError("MPI_Reduce", code)
		}
		x = x[n:]
	}
	return nil
}

func (m *Comm) Broadcast(x []float32, root int) error {
	if root < 0 || root >= m.size {
		return fmt.Errorf("mpi: Broadcast from root %d in a group of %d", root, m.size)
	}
	for len(x) > 0 {
		n := min(len(x), maxCount)
		if code := C.hs_bcast(m.c, floats(x), C.int(n), C.int(root)); code != C.MPI_SUCCESS {
			return mpiError("MPI_Bcast", code)
		}
		x = x[n:]
	}
	return nil
}

func (m *Comm) AllGather(dst, x []float64) error {
	if len(dst) != len(x)*m.size {
		return fmt.Errorf("mpi: AllGather of %d values from %d ranks into %d", len(x), m.size, len(dst))
	}
	if len(x) == 0 {
		return nil
	}
	if len(x) > maxCount {
		return fmt.Errorf("mpi: AllGather of %d values per rank", len(x))
	}
	code := C.hs_allgather(m.c, (*C.double)(unsafe.Pointer(&x[0])), C.int(len(x)), (*C.double)(unsafe.Pointer(&dst[0])))
	if code != C.MPI_SUCCESS {
		return mpiError("MPI_Allgather", code)
	}
	return nil
}

func (m *Comm) Split(color, key int) (comm.Comm, error) {
	var out C.MPI_Comm
	if code := C.hs_split(m.c, C.int(color), C.int(key), &out); code != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_split", code)
	}
	if C.hs_is_null(out) != 0 {
		return nil, nil
	}
	c, err := wrap(out, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (m *Comm) Barrier() error {
	if code := C.hs_barrier(m.c); code != C.MPI_SUCCESS {
		return mpiError("MPI_Barrier", code)
	}
	return nil
}

// IAllReduce starts MPI_Iallreduce in place. OpenMPI progresses it only
// inside Test and Wait, so the caller polls Test between pieces of other
// work. The vector is pinned, and referenced by nothing else of the request,
// until the request completes.
func (m *Comm) IAllReduce(x []float32) (comm.Request, error) {
	if len(x) > maxCount {
		return nil, fmt.Errorf("mpi: IAllReduce of %d values: at most %d in one request", len(x), maxCount)
	}
	r := &request{}
	if len(x) > 0 {
		r.pin.Pin(&x[0])
	}
	if code := C.hs_iallreduce(m.c, floats(x), C.int(len(x)), &r.req); code != C.MPI_SUCCESS {
		r.pin.Unpin()
		return nil, mpiError("MPI_Iallreduce", code)
	}
	return r, nil
}

type request struct {
	req  C.MPI_Request
	pin  runtime.Pinner
	done bool
	err  error
}

func (r *request) Test() (bool, error) {
	if r.done {
		return true, r.err
	}
	var flag C.int
	if code := C.hs_test(&r.req, &flag); code != C.MPI_SUCCESS {
		r.finish(mpiError("MPI_Test", code))
		return true, r.err
	}
	if flag != 0 {
		r.finish(nil)
	}
	return r.done, r.err
}

func (r *request) Wait() error {
	if r.done {
		return r.err
	}
	code := C.hs_wait(&r.req)
	var err error
	if code != C.MPI_SUCCESS {
		err = mpiError("MPI_Wait", code)
	}
	r.finish(err)
	return r.err
}

func (r *request) finish(err error) {
	r.done, r.err = true, err
	r.pin.Unpin()
}

func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (m *Comm) Send(to, tag int, b []byte) error {
	switch {
	case to < 0 || to >= m.size:
		return fmt.Errorf("mpi: Send to rank %d in a group of %d", to, m.size)
	case tag < 0 || tag > int(C.hs_tag_ub()):
		return fmt.Errorf("mpi: Send with tag %d (MPI allows 0 to %d)", tag, int(C.hs_tag_ub()))
	case len(b) > math.MaxInt32:
		return fmt.Errorf("mpi: a message of %d bytes is longer than MPI's count allows", len(b))
	}
	if code := C.hs_send(m.c, bytesPtr(b), C.int(len(b)), C.int(to), C.int(tag)); code != C.MPI_SUCCESS {
		return mpiError("MPI_Send", code)
	}
	return nil
}

// Polling of Recv: probes with Gosched and sched_yield between them for up
// to pollSpin (a message that comes soon is picked up within microseconds,
// and the core goes to whichever goroutine or process wants it), then sleeps
// that double from pollMin to pollMax with the thread's timer slack lowered
// to 1 µs: the default 50 µs slack, and Go's millisecond timers, would add
// that much to every wake. Chosen by the samples per second of sync on 4
// ranks on 2 cores, Bibtex and Delicious, against spins of 50 µs and 1 ms
// (BENCHMARKS.md §7); time.Sleep's granularity had cut them tenfold.
const (
	pollSpin = 200 * time.Microsecond
	pollMin  = 1 * time.Microsecond
	pollMax  = 100 * time.Microsecond
)

func (m *Comm) Recv(from, tag int, b []byte) (comm.Status, error) {
	if len(b) > math.MaxInt32 {
		return comm.Status{}, fmt.Errorf("mpi: a receive buffer of %d bytes is longer than MPI's count allows", len(b))
	}
	var (
		p        C.hs_probe
		start    time.Time
		spinning = true
	)
	sleep := pollMin
	for i := 0; ; i++ {
		p = C.hs_improbe(m.c, C.int(from), C.int(tag))
		if p.err != C.MPI_SUCCESS {
			return comm.Status{}, mpiError("MPI_Improbe", p.err)
		}
		if p.flag != 0 {
			break
		}
		if i == 0 {
			start = time.Now()
		}
		if spinning && i%16 == 15 {
			spinning = time.Since(start) < pollSpin
		}
		if spinning {
			// Let this process's other goroutines run (the driver a receiving
			// goroutine just woke), then other processes.
			runtime.Gosched()
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		}
		nap(sleep)
		sleep = min(2*sleep, pollMax)
	}
	st := comm.Status{Source: int(p.src), Tag: int(p.tag), Bytes: int(p.count)}
	code := C.hs_mrecv(bytesPtr(b), C.int(len(b)), p.msg)
	if st.Bytes > len(b) {
		return st, fmt.Errorf("%w: %d bytes from rank %d into %d", comm.ErrTruncated, st.Bytes, st.Source, len(b))
	}
	if code != C.MPI_SUCCESS {
		return st, mpiError("MPI_Mrecv", code)
	}
	return st, nil
}

// Close frees a communicator made by Split; on the world it finalizes MPI
// (on the thread that initialised it).
func (m *Comm) Close() error {
	if !m.world {
		if C.hs_finalized() != 0 {
			return nil
		}
		if code := C.hs_free(&m.c); code != C.MPI_SUCCESS {
			return mpiError("MPI_Comm_free", code)
		}
		return nil
	}
	openMu.Lock()
	defer openMu.Unlock()
	if C.hs_finalized() != 0 {
		return nil
	}
	var code C.int
	onMPIThread(func() { code = C.hs_finalize() })
	world = nil // a later Open says the world is gone
	if code != C.MPI_SUCCESS {
		return mpiError("MPI_Finalize", code)
	}
	return nil
}

func mpiError(op string, code C.int) error {
	var buf [C.MPI_MAX_ERROR_STRING]C.char
	var n C.int
	C.hs_error_string(code, &buf[0], &n)
	return fmt.Errorf("mpi: %s: %s (error class %d)", op, C.GoStringN(&buf[0], n), int(C.hs_error_class(code)))
}

var _ comm.LinkTimer = (*Comm)(nil)

// TimeAllReduce returns the seconds of iters in-place MPI_Allreduce calls of
// x made from C, without the Go layer: the reference the collectives of this
// package are measured against (comm.MeasureNetwork).
func (m *Comm) TimeAllReduce(x []float32, iters int) float64 {
	return float64(C.hs_time_allreduce(m.c, floats(x), C.int(len(x)), C.int(iters)))
}

// PingPong returns the seconds of iters round trips of n bytes between
// ranks a and b with blocking MPI_Send and MPI_Recv made from C (the link as
// MPI's collectives see it, without this package's polling). Every rank
// calls it; ranks other than a and b return 0 at once.
func (m *Comm) PingPong(a, b, n, iters int) float64 {
	buf := make([]byte, max(n, 1))
	return float64(C.hs_pingpong(m.c, C.int(a), C.int(b), unsafe.Pointer(&buf[0]), C.int(n), C.int(iters)))
}
