// Package stage reports how far long work has got — a fit, a calibration,
// a grid of runs, a benchmark — as it goes through named stages.
//
// The packages that do such work (data's fit and generators, cost's
// calibration, tune's grid, repro's studies) print nothing themselves:
// they take a Reporter, which a nil value or Quiet leaves silent, so that
// they stay usable from Go without output. A Reporter is told each stage as
// it begins (its name, the work it holds and the work's unit) and how much
// of it is done, with what the work is doing now.
//
// Line is the Reporter of the command-line tool. On a terminal it redraws
// one line in place, a few times a second: the stage, how much of it is
// done, the time it has taken and, once some of it is done, an estimate of
// the time it has left (ETA). Into a pipe or a file, where redrawn lines
// would be noise, it writes a plain line at most every PlainEvery, and
// only while the work goes on that long: a command that ends within it
// writes none. Either way the line moves on its own clock, not only when
// the work reports, so that a long step between two reports still shows
// that the command is alive.
package stage
