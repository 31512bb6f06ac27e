//go:build unix

package memory

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/hetsgd/hetsgd/internal/bounded"
)

// rlimits passes consider the room the process's resource limits leave
// it: the address-space limit (ulimit -v, RLIMIT_AS) less the address space
// the process maps of itself, and likewise the data limit (ulimit -d,
// RLIMIT_DATA, which Linux applies to private writable mappings: the Go
// heap). The room may be 0 or less: the limit leaves none.
//
// What the process maps of itself is the same at every start of the same
// binary, so that one run under one limit is admitted every time or never:
// what it mapped when it started (the Go runtime reserves much address
// space then: its page allocator's summaries, 0.7–1.2 GB), less what its
// threads had mapped by then, which depends on how far they had got
// (startVM), plus what its threads may map in all (threadSpace).
func rlimits(consider func(bytes int64, source, fix string)) {
	for _, l := range []struct {
		resource int
		used     int64
		source   string
	}{
		{syscall.RLIMIT_AS, startVM, "the address-space limit (ulimit -v)"},
		{syscall.RLIMIT_DATA, startData, "the data-segment limit (ulimit -d)"},
	} {
		var r syscall.Rlimit
		if syscall.Getrlimit(l.resource, &r) != nil || r.Cur >= 1<<62 {
			continue // unlimited (RLIM_INFINITY)
		}
		// Rounded up to 64 MiB, so that the few pages by which the
		// runtime's own mappings differ between starts do not change
		// what is admitted.
		own := (l.used + threadSpace() + arenaBytes - 1) &^ (arenaBytes - 1)
		consider(int64(r.Cur)-own, fmt.Sprintf("%s of %s, less the %s the Go runtime and its threads map themselves", l.source, Format(int64(r.Cur)), Format(own)),
			fmt.Sprintf(": raise the limit, or bound the memory with $%s instead, which counts memory used, not address space reserved", EnvLimit))
	}
}

// The address space and data mapped when the process started, less its
// threads' (threadMaps).
var startVM, startData = func() (int64, int64) {
	vm, _ := meminfo("/proc/self/status", "VmSize:")
	data, _ := meminfo("/proc/self/status", "VmData:")
	tvm, tdata := threadMaps()
	return max(0, vm-tvm), max(0, data-tdata)
}()

const (
	// stackBytes is the stack a C thread gets (a cgo binary's threads are
	// C threads): the stack limit, 8 MiB by default.
	stackBytes = 8 << 20
	// arenaBytes is the address space a malloc arena of glibc's reserves
	// (HEAP_MAX_SIZE on 64-bit systems); a thread that calls malloc while
	// another does may get one of its own.
	arenaBytes = 64 << 20
)

// threadMaps returns the address space the process's threads have mapped
// so far (their stacks, and malloc's arenas of theirs), and the part of it
// that is writable (what the data limit counts), read from
// /proc/self/maps: a stack is a page of guard followed by the stack's
// writable mapping; an arena, an aligned 64 MiB of which a writable first
// part is followed by an inaccessible rest (and which does not hold the
// Go heap, whose arenas look the same).
func threadMaps() (vm, data int64) {
	b, err := bounded.ReadFile("/proc/self/maps", 16<<20, "the process's mappings")
	if err != nil {
		return 0, 0
	}
	goHeap := uintptr(unsafe.Pointer(new([64]byte))) &^ (arenaBytes - 1)
	type mapping struct {
		start, end uintptr
		perms      string
		anon       bool
	}
	var ms []mapping
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		ms = append(ms, mapping{uintptr(start), uintptr(end), f[1], f[4] == "0" && len(f) == 5})
	}
	stack := threadStack()
	for i := 1; i < len(ms); i++ {
		prev, m := ms[i-1], ms[i]
		if !prev.anon || !m.anon || prev.end != m.start {
			continue
		}
		switch {
		case prev.perms == "---p" && prev.end-prev.start == uintptr(syscall.Getpagesize()) &&
			m.perms == "rw-p" && m.end-m.start == stack:
			vm += int64(m.end - prev.start)
			data += int64(m.end - m.start)
		case prev.perms == "rw-p" && m.perms == "---p" && prev.start%arenaBytes == 0 &&
			m.end-prev.start == arenaBytes && prev.start != goHeap:
			vm += arenaBytes
			data += int64(prev.end - prev.start)
		}
	}
	return vm, data
}

// threadStack is the size of a C thread's stack: the stack limit (ulimit
// -s), or 2 MiB when it is unlimited (glibc's rule).
func threadStack() uintptr {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_STACK, &r) != nil || r.Cur >= 1<<62 {
		return 2 << 20
	}
	return uintptr(r.Cur)
}

// threadSpace is the address space the process's threads may map besides
// the Go heap: with cgo linked, each thread has a C stack and may get a
// malloc arena of its own (480 MB measured for a small run on two cores),
// and without it a little.
func threadSpace() int64 {
	threads := int64(runtime.GOMAXPROCS(0) + 4)
	if cgo {
		return threads * (int64(threadStack()) + arenaBytes)
	}
	return 64 << 20
}

// cgo reports whether the binary was built with cgo.
var cgo = func() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" {
				return s.Value == "1"
			}
		}
	}
	return true // unknown: assume the larger need
}()
