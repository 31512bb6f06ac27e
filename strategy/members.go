package strategy

// Members tracks which devices are still in the run: all of them until a
// Leave event takes one out for good. Strategies that wait for every device
// or weight every device keep one and ask it.
type Members struct {
	gone []bool
	live int
}

// NewMembers returns n devices, all in the run.
func NewMembers(n int) Members { return Members{gone: make([]bool, n), live: n} }

// Leave takes device d out of the run; it reports false when d was already
// out (or is no device), so a strategy can ignore a repeated event.
func (m *Members) Leave(d int) bool {
	if d < 0 || d >= len(m.gone) || m.gone[d] {
		return false
	}
	m.gone[d] = true
	m.live--
	return true
}

// In reports whether device d is still in the run.
func (m *Members) In(d int) bool { return d >= 0 && d < len(m.gone) && !m.gone[d] }

// Live returns the number of devices still in the run.
func (m *Members) Live() int { return m.live }

// Uniform writes 1/Live into w for the devices in the run and 0 for the
// others, and returns w.
func (m *Members) Uniform(w []float64) []float64 {
	for i := range w {
		w[i] = 0
		if !m.gone[i] {
			w[i] = 1 / float64(m.live)
		}
	}
	return w
}

// Dispatch appends a Dispatch of batch b at rate lr in mode mode to every
// device in the run.
func (m *Members) Dispatch(out []Action, b int, lr float64, mode Mode) []Action {
	for d, gone := range m.gone {
		if !gone {
			out = append(out, Action{Kind: Dispatch, Device: d, Batch: b, LR: lr, Mode: mode})
		}
	}
	return out
}

// Barrier is a synchronous step's wait list: a batch from every device in
// the run, each device leaving it when its batch arrives or it leaves the
// run (its batch is lost, and the step goes on without it).
type Barrier struct {
	waiting []bool
	pending int
}

// NewBarrier returns the wait list of n devices, waiting for none.
func NewBarrier(n int) Barrier { return Barrier{waiting: make([]bool, n)} }

// Open starts a step that waits for every device in m's run, and returns
// how many that is.
func (b *Barrier) Open(m *Members) int {
	for d := range b.waiting {
		b.waiting[d] = m.In(d)
	}
	b.pending = m.Live()
	return b.pending
}

// Waits reports whether the step waits for device d.
func (b *Barrier) Waits(d int) bool { return d >= 0 && d < len(b.waiting) && b.waiting[d] }

// Arrive takes device d, which the step waits for, off the list and reports
// whether the step is now complete.
func (b *Barrier) Arrive(d int) bool {
	b.waiting[d] = false
	b.pending--
	return b.pending == 0
}
