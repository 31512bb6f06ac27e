package main

import (
	"context"
	"io"
)

// ctxWriter writes to w until ctx ends, then fails every write with ctx's
// error: an output written in many pieces stops at a signal.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
