// Package commtest is the conformance suite of comm.Comm implementations,
// in the manner of testing/fstest: every rank of a group calls Check with its
// own Comm, and each gets back the failures seen from where it stands.
// Checks that fail keep going through the same sequence of collectives, so a
// failure on one rank never leaves the others waiting.
package commtest

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/hetsgd/hetsgd/comm"
)

// Check runs the suite on c, a member of a group whose every member calls
// Check at the same time, and returns what failed on this rank, joined. After
// it, the group is as before (no message pending, no collective open).
func Check(c comm.Comm) error {
	s := &suite{c: c, rank: c.Rank(), size: c.Size()}
	s.basics()
	s.allReduce()
	s.sameBits()
	s.reduceBroadcast()
	s.allGather()
	s.split()
	s.nonBlocking()
	s.pinned()
	s.messages()
	s.concurrent()
	s.weighted()
	s.agree()
	if err := c.Barrier(); err != nil {
		s.failf("final Barrier: %v", err)
	}
	return errors.Join(s.errs...)
}

type suite struct {
	c          comm.Comm
	rank, size int
	errs       []error
}

func (s *suite) failf(format string, args ...any) {
	s.errs = append(s.errs, fmt.Errorf("rank %d of %d: "+format, append([]any{s.rank, s.size}, args...)...))
}

func (s *suite) basics() {
	if s.size < 1 || s.rank < 0 || s.rank >= s.size {
		s.failf("rank %d outside a group of %d", s.rank, s.size)
	}
	if err := s.c.Barrier(); err != nil {
		s.failf("Barrier: %v", err)
	}
	if err := s.c.Reduce(make([]float32, 1), s.size); err == nil {
		s.failf("Reduce to root %d accepted", s.size)
	}
}

// sum is 1 + 2 + … + size.
func (s *suite) sum() float32 { return float32(s.size * (s.size + 1) / 2) }

// allReduce: x_r[i] = (r+1)(i+1) sums to (i+1)·size(size+1)/2, exactly in
// float32 at these magnitudes, on lengths that cross any chunking.
func (s *suite) allReduce() {
	for _, n := range []int{1, 7, 1000, 1<<20 + 3} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32((s.rank + 1) * (i%4096 + 1))
		}
		if err := s.c.AllReduce(x); err != nil {
			s.failf("AllReduce of %d: %v", n, err)
			continue
		}
		for i, v := range x {
			if want := float32(i%4096+1) * s.sum(); v != want {
				s.failf("AllReduce of %d: x[%d] = %v, want %v", n, i, v, want)
				break
			}
		}
	}
	if err := s.c.AllReduce(nil); err != nil {
		s.failf("AllReduce of nothing: %v", err)
	}
}

// sameBits: random values whose sum rounds, and every rank gets the same bits.
func (s *suite) sameBits() {
	rng := rand.New(rand.NewPCG(uint64(s.rank), 9))
	x := make([]float32, 100_003)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
	}
	if err := s.c.AllReduce(x); err != nil {
		s.failf("AllReduce: %v", err)
	}
	h := fnv.New64a()
	h.Write(comm.Bytes(x))
	mine := []float64{float64(h.Sum64() >> 12)}
	all := make([]float64, s.size)
	if err := s.c.AllGather(all, mine); err != nil {
		s.failf("AllGather: %v", err)
		return
	}
	for r, v := range all {
		if v != all[0] {
			s.failf("AllReduce gave rank %d other bits than rank 0", r)
		}
	}
}

func (s *suite) reduceBroadcast() {
	for root := 0; root < s.size; root++ {
		x := []float32{float32(s.rank + 1), 2, float32(-s.rank)}
		if err := s.c.Reduce(x, root); err != nil {
			s.failf("Reduce to %d: %v", root, err)
			continue
		}
		want := []float32{float32(s.rank + 1), 2, float32(-s.rank)}
		if s.rank == root {
			want = []float32{s.sum(), 2 * float32(s.size), -(s.sum() - float32(s.size))}
		}
		if !equal(x, want) {
			s.failf("Reduce to %d: %v, want %v", root, x, want)
		}
		y := make([]float32, 5000)
		for i := range y {
			y[i] = float32(s.rank*10000 + i)
		}
		if err := s.c.Broadcast(y, root); err != nil {
			s.failf("Broadcast from %d: %v", root, err)
			continue
		}
		for i, v := range y {
			if v != float32(root*10000+i) {
				s.failf("Broadcast from %d: y[%d] = %v", root, i, v)
				break
			}
		}
	}
}

func (s *suite) allGather() {
	dst := make([]float64, 2*s.size)
	if err := s.c.AllGather(dst, []float64{float64(s.rank), math.Pi * float64(s.rank)}); err != nil {
		s.failf("AllGather: %v", err)
		return
	}
	for r := 0; r < s.size; r++ {
		if dst[2*r] != float64(r) || dst[2*r+1] != math.Pi*float64(r) {
			s.failf("AllGather: %v", dst)
			return
		}
	}
}

// split by parity, keyed in reverse rank order; rank 0 then opts out.
func (s *suite) split() {
	sub, err := s.c.Split(s.rank%2, -s.rank)
	if err != nil || sub == nil {
		s.failf("Split by parity: %v %v", sub, err)
		return
	}
	var members []int
	for r := s.size - 1; r >= 0; r-- {
		if r%2 == s.rank%2 {
			members = append(members, r)
		}
	}
	if sub.Size() != len(members) || members[sub.Rank()] != s.rank {
		s.failf("Split by parity: rank %d of %d, want the members %v in that order", sub.Rank(), sub.Size(), members)
	}
	x := []float32{float32(s.rank)}
	if err := sub.AllReduce(x); err != nil {
		s.failf("AllReduce in a split: %v", err)
	}
	var want float32
	for _, m := range members {
		want += float32(m)
	}
	if x[0] != want {
		s.failf("AllReduce in a split: %v, want %v", x[0], want)
	}
	// The parent is still usable while the split exists.
	if err := s.c.Barrier(); err != nil {
		s.failf("Barrier after Split: %v", err)
	}
	if err := sub.Close(); err != nil {
		s.failf("Close of a split: %v", err)
	}
	color := 0
	if s.rank == 0 {
		color = -1
	}
	sub, err = s.c.Split(color, 0)
	switch {
	case err != nil:
		s.failf("Split with a negative colour: %v", err)
	case s.rank == 0 && sub != nil:
		s.failf("a negative colour got a group of %d", sub.Size())
	case s.rank != 0 && (sub == nil || sub.Size() != s.size-1):
		s.failf("Split without rank 0: %v", sub)
	}
	if sub != nil {
		sub.Close()
	}
}

// nonBlocking: two all-reduces in flight, polled, then waited in reverse.
func (s *suite) nonBlocking() {
	a, b := make([]float32, 300_001), make([]float32, 17)
	for i := range a {
		a[i] = float32(s.rank + 1)
	}
	for i := range b {
		b[i] = float32(i * (s.rank + 1))
	}
	ra, err := s.c.IAllReduce(a)
	if err != nil {
		s.failf("IAllReduce: %v", err)
		return
	}
	rb, err := s.c.IAllReduce(b)
	if err != nil {
		s.failf("second IAllReduce: %v", err)
		ra.Wait()
		return
	}
	for range 100 {
		if done, err := ra.Test(); err != nil || done {
			if err != nil {
				s.failf("Test: %v", err)
			}
			break
		}
		runtime.Gosched()
	}
	if err := rb.Wait(); err != nil {
		s.failf("Wait: %v", err)
	}
	if err := ra.Wait(); err != nil {
		s.failf("Wait: %v", err)
	}
	if done, err := ra.Test(); !done || err != nil {
		s.failf("Test after Wait: %v %v", done, err)
	}
	for i, v := range a {
		if v != s.sum() {
			s.failf("IAllReduce: a[%d] = %v, want %v", i, v, s.sum())
			break
		}
	}
	for i, v := range b {
		if v != float32(i)*s.sum() {
			s.failf("IAllReduce: b[%d] = %v", i, v)
			break
		}
	}
}

// pinned: the caller drops its buffer while an IAllReduce is under way and
// the collector runs; the transport must keep it alive and in place
// (runtime.Pinner) until the request completes. The test holds the buffer
// through a weak pointer only, which the collector clears if nothing else
// keeps the buffer.
func (s *suite) pinned() {
	const n = 1 << 16
	wp, req := s.startDropped(n)
	if req == nil {
		return
	}
	for range 4 {
		runtime.GC()
		garbage := make([][]float32, 64)
		for i := range garbage {
			garbage[i] = make([]float32, n)
			for j := range garbage[i] {
				garbage[i][j] = -1
			}
		}
		runtime.KeepAlive(garbage)
	}
	p := wp.Value()
	if err := req.Wait(); err != nil {
		s.failf("Wait on a dropped buffer: %v", err)
		return
	}
	if p == nil {
		s.failf("IAllReduce of a dropped buffer: the buffer was collected while the request was under way")
		return
	}
	for i, v := range unsafe.Slice(p, n) {
		if v != s.sum() {
			s.failf("IAllReduce of a dropped buffer: x[%d] = %v, want %v", i, v, s.sum())
			break
		}
	}
}

//go:noinline
func (s *suite) startDropped(n int) (weak.Pointer[float32], comm.Request) {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(s.rank + 1)
	}
	req, err := s.c.IAllReduce(x)
	if err != nil {
		s.failf("IAllReduce: %v", err)
		return weak.Pointer[float32]{}, nil
	}
	return weak.Make(&x[0]), req
}

// messages: every rank sends to rank 0, which receives from any source in
// any order, then answers each with a long message; order within a (source,
// tag) is kept; a short buffer is an error.
func (s *suite) messages() {
	const big = 1 << 18
	if s.rank == 0 {
		seen := map[int]bool{}
		buf := make([]byte, 64)
		for range 3 * (s.size - 1) {
			st, err := s.c.Recv(comm.AnySource, comm.AnyTag, buf)
			if err != nil {
				s.failf("Recv: %v", err)
				continue
			}
			want := fmt.Sprintf("hello %d #%d", st.Source, st.Tag-st.Source*10)
			if st.Bytes != len(want) || string(buf[:st.Bytes]) != want || st.Tag/10 != st.Source {
				s.failf("Recv: %q from %d tag %d (%d bytes)", buf[:st.Bytes], st.Source, st.Tag, st.Bytes)
			}
			seen[st.Source*100+st.Tag] = true
		}
		if len(seen) != 3*(s.size-1) {
			s.failf("received %d distinct messages, want %d", len(seen), 3*(s.size-1))
		}
		for r := 1; r < s.size; r++ {
			x := make([]float32, big)
			for i := range x {
				x[i] = float32(r + i)
			}
			if err := s.c.Send(r, 5, comm.Bytes(x)); err != nil {
				s.failf("Send of %d floats: %v", big, err)
			}
			for i := range 3 {
				if err := s.c.Send(r, 6, []byte{byte(i)}); err != nil {
					s.failf("Send: %v", err)
				}
			}
			if err := s.c.Send(r, 8, make([]byte, 100)); err != nil {
				s.failf("Send: %v", err)
			}
		}
	} else {
		for i := range 3 {
			msg := fmt.Sprintf("hello %d #%d", s.rank, i)
			if err := s.c.Send(0, s.rank*10+i, []byte(msg)); err != nil {
				s.failf("Send: %v", err)
			}
		}
		x := make([]float32, big)
		st, err := s.c.Recv(0, 5, comm.Bytes(x))
		if err != nil || st.Bytes != 4*big || st.Source != 0 || st.Tag != 5 {
			s.failf("Recv of %d floats: %+v %v", big, st, err)
		}
		for i, v := range x {
			if v != float32(s.rank+i) {
				s.failf("Recv: x[%d] = %v", i, v)
				break
			}
		}
		for i := range 3 {
			b := make([]byte, 1)
			if _, err := s.c.Recv(0, 6, b); err != nil || b[0] != byte(i) {
				s.failf("message %d of a sequence arrived as %d (%v)", i, b[0], err)
			}
		}
		_, err = s.c.Recv(0, 8, make([]byte, 10))
		if !errors.Is(err, comm.ErrTruncated) {
			s.failf("a 100-byte message into 10 bytes: %v, want ErrTruncated", err)
		}
	}
	if err := s.c.Send(s.size, 0, nil); err == nil {
		s.failf("Send to rank %d accepted", s.size)
	}
}

// concurrent: rank 0 receives on one goroutine while its main one takes
// part in collectives.
func (s *suite) concurrent() {
	got := make(chan error, 1)
	if s.rank == 0 {
		go func() {
			var errs []error
			b := make([]byte, 8)
			for range s.size - 1 {
				if _, err := s.c.Recv(comm.AnySource, 9, b); err != nil {
					errs = append(errs, err)
				}
			}
			got <- errors.Join(errs...)
		}()
	}
	for range 3 {
		x := []float32{1}
		if err := s.c.AllReduce(x); err != nil || x[0] != float32(s.size) {
			s.failf("AllReduce beside a receiving goroutine: %v %v", x, err)
		}
	}
	if s.rank != 0 {
		if err := s.c.Send(0, 9, []byte("ok")); err != nil {
			s.failf("Send: %v", err)
		}
	} else if err := <-got; err != nil {
		s.failf("Recv beside collectives: %v", err)
	}
}

// weighted: WeightedAllReduce of two local vectors per rank.
func (s *suite) weighted() {
	a, b := []float32{1, 2}, []float32{10, 20}
	dst := make([]float32, 2)
	if err := comm.WeightedAllReduce(s.c, dst, []float32{0.5, float32(s.rank)}, [][]float32{a, b}); err != nil {
		s.failf("WeightedAllReduce: %v", err)
	}
	// Σ_r 0.5·a + r·b = size/2·a + (Σ r)·b
	k := s.sum() - float32(s.size)
	want := []float32{float32(s.size)/2 + 10*k, float32(s.size) + 20*k}
	if !equal(dst, want) {
		s.failf("WeightedAllReduce: %v, want %v", dst, want)
	}
}

// agree: the same fingerprints agree; one rank's different one is named.
func (s *suite) agree() {
	same := comm.Fingerprint{Name: "binary", Sum: [32]byte{1, 2, 3, 31: 0xff}}
	if err := comm.Agree(s.c, []comm.Fingerprint{same}); err != nil {
		s.failf("Agree on equal fingerprints: %v", err)
	}
	if s.size == 1 {
		return
	}
	odd := same
	if s.rank == s.size-1 {
		odd.Sum[31] = 0xfe
	}
	err := comm.Agree(s.c, []comm.Fingerprint{same, {Name: "settings", Sum: odd.Sum}})
	if want := fmt.Sprintf("rank %d differs from rank 0 in its settings", s.size-1); err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
		s.failf("Agree with one rank's settings changed: %v, want %q", err, want)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// OnMem runs f on every rank of a new comm.Mem world of n ranks, each on its
// own goroutine, closes every rank when f returns, and returns each rank's
// error: a world of processes, in one test.
func OnMem(n int, f func(c comm.Comm) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comm.Mem(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errs
}
