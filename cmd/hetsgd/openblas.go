//go:build openblas

package main

// Built with -tags openblas (and cgo), the tool runs its GEMMs on OpenBLAS;
// see package kernel/openblas.
import _ "github.com/hetsgd/hetsgd/kernel/openblas"
