// Package progress draws a one-line progress bar for a training run on a
// terminal: the epoch, a bar, samples per second of training time, the
// training loss, the last P@1, and the wall time since the start with an
// estimate of the time left.
//
// A Bar is fed a run's events (it is an engine.Observer) and redraws its
// line in place, at most ten times a second. The lines a run prints
// besides (one per evaluation, warnings) would be cut through by the bar,
// so an Observer feeds both the printer of those lines and the bar,
// clearing the bar before each line is printed and drawing it again after.
// IsTerminal tells whether a writer is a terminal, where a bar belongs: in
// a log file or a pipe its redraws are noise.
package progress
