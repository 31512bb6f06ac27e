//go:build openblas && cgo

package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import (
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/hetsgd/hetsgd/kernel"
)

func init() {
	C.openblas_set_num_threads(1)
	kernel.RegisterBLAS(backend{})
}

type backend struct{}

func (backend) Name() string { return "openblas" }

func (backend) Describe() string {
	return fmt.Sprintf("%s; %s kernels, 1 thread per call", C.GoString(C.openblas_get_config()), C.GoString(C.openblas_get_corename()))
}

func (backend) Env() (string, string) {
	if cpu.X86.HasAVX512F {
		return "OPENBLAS_CORETYPE", "SkylakeX"
	}
	return "", ""
}

func (backend) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := uint32(C.CblasNoTrans), uint32(C.CblasNoTrans)
	if transA {
		ta = C.CblasTrans
	}
	if transB {
		tb = C.CblasTrans
	}
	C.cblas_sgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(&a[0]), C.blasint(lda), (*C.float)(&b[0]), C.blasint(ldb),
		C.float(beta), (*C.float)(&c[0]), C.blasint(ldc))
}
