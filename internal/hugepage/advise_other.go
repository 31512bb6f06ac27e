//go:build !linux

package hugepage

func advise([]float32) {}
