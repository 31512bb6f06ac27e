//go:build !unix

package main

func maxRSS() int64 { return 0 }
