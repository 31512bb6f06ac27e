package engine

import "github.com/hetsgd/hetsgd/strategy"

// membership is the one record of who is in a run. The driver changes it
// as devices leave or fall silent (faults); the executor reads it (its
// collectives and queries leave the gone out), the clocks read it (a silent
// device's reports are dropped), and so do checkpoints and the log (how many
// devices are live). Its departures are strategy.Members' own — the record
// a strategy keeps of the Leave events it hears — so that engine and
// strategy count the same way.
type membership struct {
	strategy.Members
	// silent marks the devices whose reports are lost: stalled (not yet
	// given up on), or gone.
	silent []bool
}

func newMembership(n int) *membership {
	return &membership{Members: strategy.NewMembers(n), silent: make([]bool, n)}
}

// gone reports whether device d has left the run.
func (m *membership) gone(d int) bool { return !m.In(d) }

// silenced reports whether device d's reports are lost.
func (m *membership) silenced(d int) bool { return m.silent[d] }

// silence makes device d's reports lost (a stall).
func (m *membership) silence(d int) { m.silent[d] = true }

// leave takes device d out of the run for good, its reports lost; it
// reports false when d had left already.
func (m *membership) leave(d int) bool {
	m.silent[d] = true
	return m.Leave(d)
}

// goneList returns which devices have left, by device, for a checkpoint.
func (m *membership) goneList() []bool {
	out := make([]bool, m.Devices())
	for d := range out {
		out[d] = m.gone(d)
	}
	return out
}
