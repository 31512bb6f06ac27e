package kernel

// micro4x4 is the portable micro-kernel: it adds the product of a packed
// 4×kc A panel and a packed kc×4 B panel to the 4×4 tile of C at c (row
// stride ldc), with the 16 sums in scalar registers.
func micro4x4(kc int, a, b, c []float32, ldc int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	a = a[:4*kc]
	b = b[:4*kc]
	for len(a) >= 4 && len(b) >= 4 {
		a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		a, b = a[4:], b[4:]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	r := c[0:4:4]
	r[0] += c00
	r[1] += c01
	r[2] += c02
	r[3] += c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0] += c10
	r[1] += c11
	r[2] += c12
	r[3] += c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += c20
	r[1] += c21
	r[2] += c22
	r[3] += c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += c30
	r[1] += c31
	r[2] += c32
	r[3] += c33
}

// micro4x4Store is micro4x4 overwriting the tile instead of adding to it.
func micro4x4Store(kc int, a, b, c []float32, ldc int) {
	for r := 0; r < 4; r++ {
		clear(c[r*ldc : r*ldc+4])
	}
	micro4x4(kc, a, b, c, ldc)
}
