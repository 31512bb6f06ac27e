package engine

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/strategy"
)

// FaultKind is what happens to a device.
type FaultKind string

const (
	// Crash: the device dies; the engine knows at once (a dead process's
	// connection closes), its batch under way is lost, and the strategy
	// goes on without it (strategy.Leave).
	Crash FaultKind = "crash"
	// Stall: the device stops answering. Its batch under way never
	// reports; after Timeout without a word (a heartbeat's deadline) the
	// engine gives up on it and the strategy goes on without it.
	Stall FaultKind = "stall"
	// Slow: the device goes on, Factor times slower (thermal throttling, a
	// noisy neighbour). Nobody leaves; strategies that schedule by speed
	// see it in the batch times.
	Slow FaultKind = "slow"
)

// DefaultStallTimeout is how long a stalled device is waited for.
const DefaultStallTimeout = 2.0

// Fault is one fault injected into a run, at a time of the run's clock
// (training seconds, as in the log): into a device (Device), or, with
// OnRank, into a whole rank of a job under mpirun (Rank: the process, as
// when a machine fails; see Config.RankFaults).
type Fault struct {
	Device  int       `json:"device"`
	At      float64   `json:"at"`
	Kind    FaultKind `json:"kind"`
	Factor  float64   `json:"factor,omitempty"`  // Slow: how many times slower
	Timeout float64   `json:"timeout,omitempty"` // Stall: seconds before giving up (0: DefaultStallTimeout)
	Rank    int       `json:"rank,omitempty"`
	OnRank  bool      `json:"on_rank,omitempty"`
}

// ParseFault reads a --fault value: "device=2,at=30s,kind=crash",
// "kind=stall" (with an optional "timeout=5s") or "kind=slow=4"; "rank=1"
// in place of "device=…" strikes a rank. Times are seconds, with or
// without an "s".
func ParseFault(s string) (Fault, error) {
	f := Fault{Device: -1, Rank: -1, At: math.NaN()}
	for _, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return f, setting.Errorf("engine", "engine: {Config.Faults} %q: %q is not key=value", s, part)
		}
		var err error
		switch key {
		case "device":
			f.Device, err = strconv.Atoi(val)
		case "rank":
			f.Rank, err = strconv.Atoi(val)
			f.OnRank = true
		case "at":
			f.At, err = seconds(val)
		case "timeout":
			f.Timeout, err = seconds(val)
		case "kind":
			kind, factor, hasFactor := strings.Cut(val, "=")
			f.Kind = FaultKind(kind)
			switch {
			case f.Kind == Slow && (!hasFactor || factor == ""):
				return f, setting.Errorf("engine", "engine: {Config.Faults} %q: kind=slow needs the factor of the slow-down: kind=slow=FACTOR, e.g. kind=slow=4", s)
			case hasFactor:
				if f.Factor, err = strconv.ParseFloat(factor, 64); err != nil {
					return f, setting.Errorf("engine", "engine: {Config.Faults} %q: the factor %q of kind=%s is not a number", s, factor, kind)
				}
			}
		default:
			return f, setting.Errorf("engine", "engine: {Config.Faults} %q: unknown key %q (want device or rank, at, kind, timeout)", s, key)
		}
		if err != nil {
			return f, setting.Errorf("engine", "engine: {Config.Faults} %q: %s=%q is not a number", s, key, val)
		}
	}
	switch {
	case f.OnRank && f.Device >= 0:
		return f, setting.Errorf("engine", "engine: {Config.Faults} %q: a fault strikes a device or a rank, not both", s)
	case f.OnRank && f.Rank < 0:
		return f, setting.Errorf("engine", "engine: {Config.Faults} %q: rank=%d: need a rank ≥ 0", s, f.Rank)
	case !f.OnRank && f.Device < 0 || math.IsNaN(f.At) || f.Kind == "":
		return f, setting.Errorf("engine", "engine: {Config.Faults} %q: give device=N (or rank=R), at=SECONDS and kind=crash, stall or slow=FACTOR", s)
	}
	if !f.OnRank {
		f.Rank = 0
	}
	return f, nil
}

func seconds(v string) (float64, error) { return strconv.ParseFloat(strings.TrimSuffix(v, "s"), 64) }

// String is the flag's form of f.
func (f Fault) String() string {
	s := fmt.Sprintf("device=%d,at=%gs,kind=%s", f.Device, f.At, f.Kind)
	if f.OnRank {
		s = fmt.Sprintf("rank=%d,at=%gs,kind=%s", f.Rank, f.At, f.Kind)
	}
	if f.Kind == Slow {
		s += fmt.Sprintf("=%g", f.Factor)
	}
	if f.Timeout > 0 {
		s += fmt.Sprintf(",timeout=%gs", f.Timeout)
	}
	return s
}

// checkFaults validates the faults of c: devices that exist, times and
// factors in range, at least one device that never leaves.
func (c *Config) checkFaults() error {
	leaving := map[int]bool{}
	for _, f := range c.Faults {
		switch {
		case f.Device < 0 || f.Device >= c.Devices:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: no device %d among %d", f, f.Device, c.Devices)
		case !(f.At >= 0 && f.At <= 1e9):
			return setting.Errorf("engine", "engine: {Config.Faults} %s: at=%v: need a time in [0, 1e9] seconds", f, f.At)
		case f.Kind == Slow && !(f.Factor >= 1 && f.Factor <= 1e6):
			return setting.Errorf("engine", "engine: {Config.Faults} %s: slow=%v: need a factor in [1, 1e6]", f, f.Factor)
		case f.Kind != Slow && f.Factor != 0:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: only kind=slow takes a factor", f)
		case f.Kind == Stall && !(f.Timeout >= 0 && f.Timeout <= 1e6):
			return setting.Errorf("engine", "engine: {Config.Faults} %s: timeout=%v: need seconds in [0, 1e6]", f, f.Timeout)
		case f.Kind != Stall && f.Timeout != 0:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: only kind=stall takes a timeout", f)
		case f.Kind != Crash && f.Kind != Stall && f.Kind != Slow:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: kind %q: want crash, stall or slow=FACTOR", f, f.Kind)
		}
		if f.Kind != Slow {
			leaving[f.Device] = true
		}
	}
	if len(leaving) >= c.Devices && c.Devices > 0 {
		return setting.Errorf("engine", "engine: {Config.Faults}: every device would leave the run; at least one must remain")
	}
	return nil
}

// sortedFaults returns the faults in the order they strike.
func sortedFaults(fs []Fault) []Fault {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b Fault) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return out
}

// strike applies a fault as it strikes, at the run's time now: a slow-down
// takes effect, a crash takes the device out, a stall silences it and
// returns when to give up on it. leave reports whether the device leaves
// now.
func (r *run) strike(f Fault, now float64) (leave bool, giveUpAt float64) {
	switch f.Kind {
	case Slow:
		if err := r.job.slow(f.Device, f.Factor); err != nil && r.faultErr == nil {
			r.faultErr = err // another rank's device
		}
		r.noteFault(runlog.Fault{Event: "fault", Time: now, Device: f.Device, Kind: string(f.Kind), Factor: f.Factor, Live: r.job.live()})
		return false, 0
	case Stall:
		r.members.silence(f.Device)
		t := f.Timeout
		if t == 0 {
			t = DefaultStallTimeout
		}
		r.noteFault(runlog.Fault{Event: "fault", Time: now, Device: f.Device, Kind: string(f.Kind), Live: r.job.live()})
		return false, now + t
	}
	return true, 0
}

// leave takes device d out of the run at time now: its slot is freed (a
// batch under way is lost), collectives leave it out, and the strategy
// hears of it. It reports false when d had already left.
func (r *run) leave(d int, kind FaultKind, now float64) bool {
	if !r.members.leave(d) {
		return false
	}
	if err := r.job.leave(d); err != nil && r.faultErr == nil {
		r.faultErr = err
	}
	r.slots[d].busy = false
	r.noteFault(runlog.Fault{Event: "fault", Time: now, Device: d, Kind: string(kind), Left: true, Live: r.job.live()})
	return true
}

// noteFault logs a fault; a log write error ends the run at the next event.
func (r *run) noteFault(ev runlog.Fault) {
	r.res.Faults = append(r.res.Faults, ev)
	if err := r.write(ev); err != nil && r.faultErr == nil {
		r.faultErr = err
	}
}

// leaveEvent is the strategy's news of a departure.
func leaveEvent(d int) strategy.Event { return strategy.Event{Kind: strategy.Leave, Device: d} }

// warnUnstruck warns of the faults a finished run never reached: their
// time is past its end, so the run said nothing of what was asked.
func (r *run) warnUnstruck() error {
	end := r.clk.now()
	for _, f := range sortedFaults(append(slices.Clone(r.cfg.Faults), r.cfg.RankFaults...)) {
		if !(f.At > end) {
			continue
		}
		if err := r.warn("fault", fmt.Sprintf("the fault %s never struck: the run ended at %.4g seconds of training, before it", f, end)); err != nil {
			return err
		}
	}
	return nil
}

// checkRankFaults validates the rank faults of c: ranks of the job, the
// real clock, times, factors and timeouts in range.
func (c *Config) checkRankFaults() error {
	ranks := 1
	if c.World != nil {
		ranks = c.World.Size()
	}
	for _, f := range c.RankFaults {
		switch {
		case !f.OnRank:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: not a rank's fault", f)
		case c.Clock != Real:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: a rank's fault strikes a process of a real-clock job (the virtual clock has no ranks)", f)
		case f.Rank >= ranks:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: no rank %d among %d", f, f.Rank, ranks)
		case !(f.At >= 0 && f.At <= 1e9):
			return setting.Errorf("engine", "engine: {Config.Faults} %s: at=%v: need a time in [0, 1e9] seconds", f, f.At)
		case f.Kind == Slow && !(f.Factor >= 1 && f.Factor <= 1e6):
			return setting.Errorf("engine", "engine: {Config.Faults} %s: slow=%v: need a factor in [1, 1e6]", f, f.Factor)
		case f.Kind == Stall && !(f.Timeout >= 0 && f.Timeout <= 1e6):
			return setting.Errorf("engine", "engine: {Config.Faults} %s: timeout=%v: need seconds in [0, 1e6]", f, f.Timeout)
		case f.Kind != Crash && f.Kind != Stall && f.Kind != Slow:
			return setting.Errorf("engine", "engine: {Config.Faults} %s: kind %q: want crash, stall or slow=FACTOR", f, f.Kind)
		}
	}
	return nil
}

// strikeRank strikes this process with rank fault f: a crash kills it at
// once; a stall stops it for its timeout, then kills it; a slow-down slows
// its devices.
func (x *executor) strikeRank(f Fault) {
	switch f.Kind {
	case Slow:
		for _, d := range x.devs {
			d.slowDown(f.Factor)
		}
	case Stall:
		t := f.Timeout
		if t == 0 {
			t = DefaultStallTimeout
		}
		time.Sleep(time.Duration(t * 1e9))
		killSelf()
	default:
		killSelf()
	}
}

// strikeRank strikes rank fault f at the run's time now: it is logged (and
// the log synced: a crash leaves no chance later), then this process or the
// rank's is struck.
func (r *run) strikeRank(f Fault, now float64) {
	rank := f.Rank
	r.noteFault(runlog.Fault{Event: "fault", Time: now, Device: -1, Rank: &rank, Kind: string(f.Kind), Factor: f.Factor, Live: r.job.live()})
	if err := r.log.Sync(); err != nil && r.faultErr == nil {
		r.faultErr = err
	}
	if err := r.job.strikeRank(f); err != nil && r.faultErr == nil {
		r.faultErr = err
	}
}
