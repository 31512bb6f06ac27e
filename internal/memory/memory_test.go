package memory

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestLimitFromEnv(t *testing.T) {
	t.Setenv(EnvLimit, "1M")
	b, src, ok := Limit()
	if !ok || b != 1<<20 || !strings.Contains(src, EnvLimit) {
		t.Fatalf("Limit() = %d %q %v", b, src, ok)
	}
	if err := Check(1<<20, "x"); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	err := Check(3<<30, "the model")
	if err == nil || !strings.Contains(err.Error(), "the model needs an estimated 3.0 GiB, more than the 1.0 MiB available ($HETSGD_MEMORY_LIMIT)") {
		t.Errorf("over the limit: %v", err)
	}
}

func TestMachineLimit(t *testing.T) {
	t.Setenv(EnvLimit, "")
	if b, _, ok := Limit(); ok && b < 1<<20 {
		t.Errorf("a machine with %d bytes", b)
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"1024": 1024, "512M": 512 << 20, "24g": 24 << 30, "1.5K": 1536} {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-1", "0", "1e30T", "NaN"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) accepted", s)
		}
	}
	t.Setenv(EnvLimit, "lots")
	if err := CheckEnv(); err == nil || !strings.Contains(err.Error(), EnvLimit) {
		t.Errorf("CheckEnv: %v", err)
	}
}

func TestSaturating(t *testing.T) {
	if Mul(1<<40, 1<<40) != math.MaxInt64 || Add(math.MaxInt64, 1) != math.MaxInt64 || Mul(3, 4) != 12 || Add(3, 4) != 7 {
		t.Error("saturating arithmetic")
	}
}

// Govern sets the runtime's soft limit below the process's limit, and
// leaves one $GOMEMLIMIT sets alone.
func TestGovern(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv(EnvLimit, "2G")
	t.Setenv("GOMEMLIMIT", "")
	if got, want := Govern(), int64(2<<30-(2<<30)/20); got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("Govern set %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), want)
	}
	debug.SetMemoryLimit(1 << 40)
	t.Setenv("GOMEMLIMIT", "3GiB")
	if got := Govern(); got != 0 || debug.SetMemoryLimit(-1) != 1<<40 {
		t.Fatalf("with $GOMEMLIMIT set, Govern set %d", got)
	}
}

// A limit that leaves no room says so, with its figures and the fix,
// never "more than the 1 bytes available".
func TestNoRoom(t *testing.T) {
	const source, fix = "the address-space limit (ulimit -v) of 1.5 GiB, less the 1.7 GiB the Go runtime and its threads map themselves", ": raise the limit"
	err := over(3<<20, "the model", -200<<20, source, fix, true)
	if err == nil || err.Error() != "memory: the model needs an estimated 3.0 MiB, and "+source+", leaves no room: raise the limit" {
		t.Errorf("no room: %v", err)
	}
	if err := over(3<<20, "the model", 1<<20, source, fix, true); err == nil || !strings.Contains(err.Error(), "more than the 1.0 MiB available ("+source+"): raise the limit") {
		t.Errorf("too little room: %v", err)
	}
	if over(3<<20, "x", 4<<20, source, fix, true) != nil || over(3<<20, "x", 0, "", "", false) != nil {
		t.Error("a need within the limit, or no limit known, refused")
	}
}
