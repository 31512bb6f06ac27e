// Package report writes what the benchmarks measure: Markdown tables and
// line plots (SVG and PNG, through gonum/plot), into a folder the user names. It
// knows nothing of training; it draws series and tables.
package report
