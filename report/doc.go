// Package report writes what the benchmarks measure: Markdown tables and
// line plots (SVG and PNG, through gonum/plot), into a folder the user names.
// Its drawing knows nothing of training; it draws series and tables.
//
// RunsPlot and BatchPlot make the figures of run logs (package runlog)
// that hetsgd plot draws: a metric of each run's evaluations against
// training time, epochs or samples (Metrics, Axes), one line per run, or
// one run's batch size per device at each merge. They return a Plot, which
// the caller titles anew if it likes and saves (Plot.SaveSVGAndPNG).
package report
