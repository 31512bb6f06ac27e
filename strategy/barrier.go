package strategy

// Uniform returns n weights of 1/n.
func Uniform(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / float64(n)
	}
	return w
}

// DispatchAll appends a Dispatch of batch b at learning rate lr in mode m
// to every one of n devices.
func DispatchAll(out []Action, n, b int, lr float64, m Mode) []Action {
	for d := 0; d < n; d++ {
		out = append(out, Action{Kind: Dispatch, Device: d, Batch: b, LR: lr, Mode: m})
	}
	return out
}
