package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hetsgd/hetsgd/internal/httpserve"
	"github.com/hetsgd/hetsgd/serve"
	"github.com/hetsgd/hetsgd/train"
	"github.com/hetsgd/hetsgd/trained"
)

// runServe is "hetsgd serve": a trained model's predictions over HTTP
// (package serve), until Ctrl-C.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve --model CHECKPOINT|MODEL.npz [--addr host:port] [flags]", stderr)
	path := fs.String("model", "", "the trained model: a checkpoint `dir` or file (hetsgd train --checkpoint), or an .npz of hetsgd export")
	which := whichFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8000", "listen at `host:port` (port 0: any free one); a host other than loopback opens the model to the network")
	var opt serve.Options
	fs.StringVar(&opt.Name, "name", "hetsgd", "the model's `name` in /v2/models/NAME")
	fs.IntVar(&opt.MaxBatch, "max-batch", 256, "most `points` scored in one pass: the requests queued when the scorer frees are scored together, up to it")
	fs.IntVar(&opt.MaxPoints, "max-points", 1024, "most `points` one request may hold")
	fs.Int64Var(&opt.MaxBody, "max-body", 16<<20, "most `bytes` of a request's body")
	var rk train.Ranking
	rk.Register(fs, "; -1 for a label a point did not retrieve")
	reload := fs.Float64("reload", 5, "`seconds` between looks for a newer model at --model (a run's next checkpoint, served once written; 0: never)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *path == "":
		return fmt.Errorf("give --model")
	case opt.MaxBatch < 1 || opt.MaxBatch > 1<<16 || opt.MaxPoints < 1 || opt.MaxPoints > 1<<20 || opt.MaxBody < 1:
		return fmt.Errorf("--max-batch %d, --max-points %d, --max-body %d: want 1 to 65536, 1 to 1048576 and at least 1", opt.MaxBatch, opt.MaxPoints, opt.MaxBody)
	case !(*reload >= 0 && *reload <= 86400):
		return fmt.Errorf("--reload %v: want seconds in [0, 86400]", *reload)
	}
	if err := rk.Check(fs); err != nil {
		return err
	}
	_, modified := serve.Stat(*path, trained.Which(*which)) // before the read, as serve.Load
	m, err := openModel(*path, *which, stderr)
	if err != nil {
		return err
	}
	if err := readParams(m, trained.Use{What: "serving", Rows: opt.MaxBatch, Fix: "serve with a smaller --max-batch"}); err != nil {
		return err
	}
	if rk.Rank == "tables" {
		opt.Tables = rk.Tables // for each model served: a reload may change its shape
	}
	sm, err := serve.Served(m, modified, opt.Tables)
	if err != nil {
		return err
	}
	s := serve.New(sm, opt)
	go s.Run(ctx)
	say := func(line string) { fmt.Fprintf(stderr, "hetsgd serve: %s\n", line) }
	if *reload > 0 {
		go s.Follow(ctx, *path, trained.Which(*which), time.Duration(*reload*float64(time.Second)), say)
	}
	if !httpserve.IsLoopback(*addr) {
		say(fmt.Sprintf("warning: --addr %s is not a loopback address: the model answers the network", *addr))
	}
	return httpserve.Serve(ctx, "serve", *addr, s.Handler(), func(url string) {
		fmt.Fprintf(stdout, "serving %s at %sv2/models/%s/infer and %spredict\n", m.File, url, opt.Name, url)
	})
}
