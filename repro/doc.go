// Package repro reproduces the experiments of the papers behind hetsgd's
// strategies on our data and engines, and writes what it measures into a
// report: the methodology, Markdown tables, SVG figures, every run's JSON
// Lines log, and a plain statement of which of the paper's claims hold here.
//
// The studies run the same engine and strategies as `hetsgd train`; a study
// is a list of engine configurations plus the analysis of their results.
//
// Run runs the studies named (of Studies) into a report folder: LoadSet
// gives their data sets — Bibtex from the binary, Delicious and MNIST from
// a data directory, synthetic sets generated at a profile's scale, and the
// stand-ins of the papers' sets at full scale from the data directory (the
// paper study's, written there by hetsgd data gen) — and
// Options their budgets, seed and network. `hetsgd bench` is Run behind
// flags.
package repro
