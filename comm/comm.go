package comm

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/hetsgd/hetsgd/kernel"
)

// Comm is one process's handle on a group of processes (ranks): the
// collectives and messages that cross between devices held by different
// processes. Every rank of the group calls the collectives in the same
// order; a collective returns on a rank once that rank's part is done.
//
// Implementations: Mem (ranks as goroutines of one process, exchanging
// through memory; Self is its world of one) and, with the build tag mpi,
// package comm/mpi over OpenMPI. Both pass the suite in comm/commtest.
//
// A Comm may be used from several goroutines at once (MPI's
// MPI_THREAD_MULTIPLE), provided that the collectives of one Comm are
// called in the same order on every rank and that no two goroutines receive
// the same (source, tag) at once.
type Comm interface {
	// Rank is this process's number in the group, 0 ≤ Rank < Size.
	Rank() int
	Size() int

	// AllReduce replaces x, on every rank, by the element-wise sum of every
	// rank's x. Every rank receives the same bits.
	AllReduce(x []float32) error
	// IAllReduce starts an AllReduce of x and returns at once. x belongs to
	// the transport until the request completes; the implementation keeps it
	// alive and in place (runtime.Pinner) even if the caller drops x. The
	// caller must see the request complete (Wait, or Test until it reports
	// done): that is when the transport lets x go.
	IAllReduce(x []float32) (Request, error)
	// Reduce sums every rank's x into root's x; other ranks' x are unchanged.
	Reduce(x []float32, root int) error
	// Broadcast copies root's x into every rank's x.
	Broadcast(x []float32, root int) error
	// AllGather fills dst, on every rank, with every rank's x in rank order:
	// len(dst) = Size·len(x), and len(x) is the same on every rank.
	AllGather(dst, x []float64) error
	// Split partitions the group by colour: ranks passing the same colour
	// form a new group, ordered by key and then by their rank here. A
	// negative colour takes part in no group and gets a nil Comm.
	Split(color, key int) (Comm, error)
	// Barrier returns once every rank has called it.
	Barrier() error

	// Send delivers b to rank to with a tag ≥ 0. It may return before the
	// message is received, or wait for the receiver: a program must not rely
	// on either.
	Send(to, tag int, b []byte) error
	// Recv receives one message from rank from (or AnySource) with tag tag
	// (or AnyTag) into b, which must be large enough. Messages from one
	// sender with one tag arrive in the order they were sent. A rank waiting
	// in Recv yields its core, then sleeps, rather than spinning on it.
	Recv(from, tag int, b []byte) (Status, error)

	// Close releases the group. Closing the world ends the transport: no
	// Comm of it may be used afterwards.
	Close() error
}

// Request is a non-blocking operation under way.
type Request interface {
	// Test reports whether the operation has completed, helping it progress.
	Test() (bool, error)
	// Wait returns once the operation has completed.
	Wait() error
}

// Status describes a received message.
type Status struct {
	Source, Tag int
	Bytes       int // length of the message
}

// Wildcards of Recv.
const (
	AnySource = -1
	AnyTag    = -1
)

// ErrTruncated is wrapped by the error of a Recv whose buffer is shorter
// than the message.
var ErrTruncated = errors.New("comm: message longer than the receive buffer")

// Bytes returns the memory of x as bytes, for Send and Recv of float32
// vectors. Ranks exchanging it must share a byte order (they run the same
// binary: see Agree).
func Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// WeightedAllReduce sets dst, on every rank, to the weighted sum of the
// vectors of every rank: Σ over ranks of Σ_i w[i]·local[i]. The rank's own
// part is summed in order by kernel.WeightedSum, so on a group of one it is
// exactly that; across ranks the parts are added by AllReduce. dst must not
// be one of the local vectors.
func WeightedAllReduce(c Comm, dst []float32, w []float32, local [][]float32) error {
	kernel.WeightedSum(dst, w, local)
	if c.Size() == 1 {
		return nil
	}
	return c.AllReduce(dst)
}

// checkRoot reports a root outside the group.
func checkRoot(c Comm, root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("comm: root %d outside a group of %d", root, c.Size())
	}
	return nil
}
