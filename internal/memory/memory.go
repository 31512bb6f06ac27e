package memory

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/internal/bounded"
)

// EnvLimit is the environment variable that lowers the limit.
const EnvLimit = "HETSGD_MEMORY_LIMIT"

// Limit returns the bytes this process may use and where that figure comes
// from; ok is false when nothing is known (then nothing is refused). The
// bytes are 0 or less when a resource limit leaves no room at all.
func Limit() (bytes int64, source string, ok bool) {
	bytes, source, _, ok = limit()
	return bytes, source, ok
}

// limit is Limit, with what to do when the limit is too low, where the
// source's words do not say it.
func limit() (bytes int64, source, fix string, ok bool) {
	bytes = math.MaxInt64
	consider := func(b int64, s, f string) {
		if b < bytes {
			bytes, source, fix, ok = b, s, f, true
		}
	}
	positive := func(b int64, s string) {
		if b > 0 {
			consider(b, s, "")
		}
	}
	if b, found := meminfo("/proc/meminfo", "MemTotal:"); found {
		positive(b, "the machine's memory")
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if raw, err := bounded.ReadFile(p, 4096, "a memory limit"); err == nil {
			if b, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err == nil {
				positive(b, "the control group's limit")
			}
		}
	}
	rlimits(consider)
	if v := os.Getenv(EnvLimit); v != "" {
		if b, err := ParseBytes(v); err == nil {
			positive(b, "$"+EnvLimit)
		}
	}
	return bytes, source, fix, ok
}

// Govern sets the Go runtime's soft memory limit to 95% of Limit (unless
// $GOMEMLIMIT sets one) and returns it, 0 when nothing is known. Without
// it the garbage collector lets the heap grow to twice what was live at its
// last cycle: a command that runs jobs in turn (a study's runs) keeps a
// finished job's models, garbage by then, until the next has allocated as
// much again, and a run the estimate admits ends in the kernel's
// out-of-memory kill. The 5% is left to what the runtime does not count
// (the kernels' threads, cgo).
func Govern() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	b, _, ok := Limit()
	if !ok || b <= 0 {
		return 0
	}
	b -= b / 20
	debug.SetMemoryLimit(b)
	return b
}

// CheckEnv reports a malformed HETSGD_MEMORY_LIMIT, and a resource limit
// that leaves no room at all, for commands to name before any work.
func CheckEnv() error {
	if v := os.Getenv(EnvLimit); v != "" {
		if _, err := ParseBytes(v); err != nil {
			return fmt.Errorf("memory: $%s=%q: %w", EnvLimit, v, err)
		}
	}
	if b, source, fix, ok := limit(); ok && b <= 0 {
		return fmt.Errorf("memory: %s, leaves no room for any work%s", source, fix)
	}
	return nil
}

// meminfo reads a kB figure of a file of Linux's /proc (meminfo, a
// process's status): the line starting with key.
func meminfo(path, key string) (int64, bool) {
	v, ok := procFields(path, key)
	return v[0], ok[0]
}

// procFields reads figures of a file of Linux's /proc, in one read: each
// key's line, a number of kB (returned in bytes) or a count.
func procFields(path string, keys ...string) ([]int64, []bool) {
	vals, ok := make([]int64, len(keys)), make([]bool, len(keys))
	b, err := bounded.ReadFile(path, 1<<20, "the memory's description")
	if err != nil {
		return vals, ok
	}
	for _, line := range strings.Split(string(b), "\n") {
		for i, key := range keys {
			if rest, found := strings.CutPrefix(line, key); found {
				rest = strings.TrimSpace(rest)
				kb, isKB := strings.CutSuffix(rest, " kB")
				v, err := strconv.ParseInt(kb, 10, 64)
				if isKB {
					v <<= 10
				}
				vals[i], ok[i] = v, err == nil
			}
		}
	}
	return vals, ok
}

// ParseBytes reads "1073741824", "512M", "24G" (powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	if n := len(s); n > 0 {
		if i := strings.IndexByte("KMGT", s[n-1]&^0x20); i >= 0 {
			mult, s = int64(1)<<(10*(i+1)), s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || v*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("want a positive number of bytes, like 512M or 24G")
	}
	return int64(v * float64(mult)), nil
}

// Format prints a byte count for people: "25.6 GiB".
func Format(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", b)
}

// Check returns an error when need bytes exceed the limit. what says what
// needs them and how to need less.
func Check(need int64, what string) error {
	limit, source, fix, ok := limit()
	return over(need, what, limit, source, fix, ok)
}

// over is Check's verdict on need bytes for what, under the limit of
// source (ok: one is known), with fix appended to a refusal.
func over(need int64, what string, limit int64, source, fix string, ok bool) error {
	switch {
	case !ok || need <= limit:
		return nil
	case limit <= 0:
		return fmt.Errorf("memory: %s needs an estimated %s, and %s, leaves no room%s", what, Format(need), source, fix)
	}
	return fmt.Errorf("memory: %s needs an estimated %s, more than the %s available (%s)%s", what, Format(need), Format(limit), source, fix)
}

// Add returns a + b, saturating instead of wrapping round: estimates of
// absurd settings stay absurd.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Mul returns a × b for non-negative a and b, saturating.
func Mul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
