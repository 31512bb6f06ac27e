//go:build unix

package memory

import (
	"runtime"
	"runtime/debug"
	"syscall"
)

// rlimits passes consider the room the process's resource limits leave
// it: the address-space limit (ulimit -v, RLIMIT_AS) less the address space
// it mapped when it started, and likewise the data limit (ulimit -d,
// RLIMIT_DATA, which Linux applies to private writable mappings: the Go
// heap). The Go runtime reserves much address space at start (its page
// allocator's summaries: 0.7–1.2 GB); what the process allocates later is
// what estimates count (its data, models, workspaces), so the room is
// measured from the start, not from now, less what the runtime's threads
// map (threadSpace).
func rlimits(consider func(int64, string)) {
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
		consider(max(1, int64(r.Cur)-l.used-threadSpace()), l.source)
	}
}

// The address space and data mapped when the process started.
var startVM, startData = func() (int64, int64) {
	vm, _ := meminfo("/proc/self/status", "VmSize:")
	data, _ := meminfo("/proc/self/status", "VmData:")
	return vm, data
}()

// threadSpace is the address space the process's threads map besides the
// Go heap: with cgo linked, each thread has a C stack (8 MiB) and may get a
// malloc arena of its own (64 MiB) — 480 MB measured for a small run on two
// cores — and without it a little.
func threadSpace() int64 {
	threads := int64(runtime.GOMAXPROCS(0) + 4)
	if cgo {
		return threads * 72 << 20
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
