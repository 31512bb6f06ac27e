//go:build unix

package memory

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
)

// rlimits passes consider the room the process's resource limits leave
// it: the address-space limit (ulimit -v, RLIMIT_AS) less the address space
// the process maps of itself, and likewise the data limit (ulimit -d,
// RLIMIT_DATA, which Linux applies to private writable mappings: the Go
// heap). The room may be 0 or less: the limit leaves none.
//
// What the process maps of itself must be the same at every start of the
// same binary, so that one run under one limit is admitted every time or
// never: what it mapped when it started (the Go runtime reserves much
// address space then: its page allocator's summaries, 0.7–1.2 GB) less
// what of it varies from start to start (startVM) — the Go heap, which
// grows by arenas of 64 MiB as fast as the start's allocations outrun its
// collector, and which the run's own estimate counts; and with cgo the C
// threads' stacks, as many as threads had started by then — plus what its
// threads may map in all (threadSpace). The malloc arenas threads make as
// they call malloc at once would vary it by 64 MiB each: under a limit the
// process runs with one (StartEnv).
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
		// Rounded up to ownStep, so that what the runtime's own mappings
		// differ by between starts does not change what is admitted.
		own := (l.used + threadSpace() + ownStep - 1) &^ (ownStep - 1)
		consider(int64(r.Cur)-own, fmt.Sprintf("%s of %s, less the %s the Go runtime and its threads map themselves", l.source, Format(int64(r.Cur)), Format(own)),
			fmt.Sprintf(": raise the limit, or bound the memory with $%s instead, which counts memory used, not address space reserved", EnvLimit))
	}
}

// limited reports whether a resource limit bounds the address space or
// the data.
func limited() bool {
	for _, res := range []int{syscall.RLIMIT_AS, syscall.RLIMIT_DATA} {
		var r syscall.Rlimit
		if syscall.Getrlimit(res, &r) == nil && r.Cur < 1<<62 {
			return true
		}
	}
	return false
}

// arenaEnv is glibc's setting of the number of malloc arenas.
const arenaEnv = "MALLOC_ARENA_MAX"

// StartEnv returns what the process's environment must hold from its
// start for the limits to be counted alike at every start, as KEY=VALUE
// ("" when nothing): one malloc arena (MALLOC_ARENA_MAX=1) when a resource
// limit bounds its address space or data (ulimit -v or -d) and the binary
// links C (cgo). Each C thread that calls malloc while another does may
// otherwise get an arena of its own, 64 MiB of address space, and how many
// threads do by the time the process starts is chance. A command restarts
// with it first thing, before any work (package internal/reexec). The
// variable passes on to the processes the tool starts (mpirun and its
// ranks under hetsgd launch), where one arena is as good.
func StartEnv() string {
	if !cgo || !limited() {
		return ""
	}
	return arenaEnv + "=1"
}

// The address space and data mapped when the process started, less the
// Go heap's and, with cgo, the C stacks of its threads (all but the first
// thread's, which the process has from its start), read at once. A Go
// thread's stack without cgo is the heap's.
var startVM, startData = func() (int64, int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	v, _ := procFields("/proc/self/status", "VmSize:", "VmData:", "Threads:")
	varies := int64(ms.HeapSys)
	if cgo {
		varies += max(0, v[2]-1) * (threadStack() + int64(os.Getpagesize()))
	}
	return max(0, v[0]-varies), max(0, v[1]-varies)
}()

// arenaBytes is the address space a malloc arena of glibc's reserves
// (HEAP_MAX_SIZE on 64-bit systems).
const arenaBytes = 64 << 20

// ownStep is what the address space the process maps of itself is
// rounded up to. What it maps at its start, less the heap and the
// threads' stacks, still differs from start to start by steps of 64 MiB
// now and then: on a two-core machine beside stress --cpu 2 and a
// training run, one start in thirty mapped 1,344 MiB where the others
// mapped 1,279–1,280 (and before the restart with one malloc arena,
// 1,472–1,608). Rounded to 512 MiB the figure is the same at every start
// unless it lies right at a step; the price is up to 512 MiB less room.
const ownStep = 512 << 20

// threadStack is the size of a C thread's stack: the stack limit (ulimit
// -s), or 2 MiB when it is unlimited (glibc's rule).
func threadStack() int64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_STACK, &r) != nil || r.Cur >= 1<<62 {
		return 2 << 20
	}
	return int64(r.Cur)
}

// threadSpace is the address space the process's threads may map besides
// the Go heap: with cgo linked, each thread has a C stack, and may get a
// malloc arena of its own unless MALLOC_ARENA_MAX bounds them (Reexec
// sets it to 1: the first arena is the process's own); without cgo, a
// little.
func threadSpace() int64 {
	threads := int64(runtime.GOMAXPROCS(0) + 4)
	if !cgo {
		return 64 << 20
	}
	arenas := threads
	if n, err := strconv.Atoi(os.Getenv(arenaEnv)); err == nil && n >= 1 {
		arenas = min(threads, int64(n-1))
	}
	return threads*threadStack() + arenas*arenaBytes
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
