//go:build !unix

package train

func maxRSS() int64 { return 0 }
