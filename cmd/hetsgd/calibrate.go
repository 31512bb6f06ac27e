package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cost"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/progress/stage"
)

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("calibrate", "calibrate [--out FILE] [--quick] | mpirun -np N hetsgd calibrate --network [--out FILE]", stderr)
	out := fs.String("out", "", "write the cost model (with --network: the network model) to `file` (default: print it)")
	quick := fs.Bool("quick", false, "measure a few shapes (message sizes) only")
	force := fs.Bool("force", false, "overwrite an existing --out file")
	network := fs.Bool("network", false, "under mpirun (the mpi build): measure the latency and bandwidth between the ranks, for --time virtual --network")
	mode := fs.String("progress", stage.Auto, progressHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *network {
		return calibrateNetwork(ctx, *quick, *out, *force, stdout)
	}
	if err := checkOut(*out, *force); err != nil {
		return err
	}
	if how := comm.Launched(); how != "" {
		return fmt.Errorf("the cost model is measured in one process: start it without mpirun, or measure the network with --network (started by a process manager: %s)", how)
	}
	line, err := stage.NewLine(stderr, *mode, "hetsgd calibrate")
	if err != nil {
		return err
	}
	// The fit's table is printed at the end of the measurement: buffered,
	// its write is checked once.
	var table bytes.Buffer
	c, err := cost.CalibrateContext(ctx, *quick, &table, line)
	line.Close()
	if err != nil {
		return err
	}
	if _, err := stdout.Write(table.Bytes()); err != nil {
		return fmt.Errorf("writing the fit: %w", err)
	}
	return writeModel(stdout, c, "cost model", "--cost", *out, *force)
}

// progressHelp is --progress's of the commands that report their stages.
const progressHelp = "progress on stderr: auto (a line redrawn on a terminal; elsewhere a plain line every 10 s once the work has gone on that long), on (redrawn, even into a file) or off"

// checkOut fails at once where writing --out at the end would fail (it
// exists without --force, it is not a regular file, its folder cannot be
// written), rather than after minutes of measuring.
func checkOut(path string, force bool) error {
	if path == "" {
		return nil
	}
	f, err := atomicfile.Create(path, force)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	f.Abort()
	return nil
}

// calibrateNetwork measures the links of the MPI job this process is a rank
// of; rank 0 reports and writes the model.
func calibrateNetwork(ctx context.Context, quick bool, out string, force bool, stdout io.Writer) error {
	world, err := comm.OpenWorld()
	if err != nil {
		return err
	}
	if world.Size() < 2 {
		return errors.New("--network measures the links between the ranks of an MPI job: run it as mpirun -np 2 hetsgd calibrate --network (or more ranks, across the hosts to measure), with the mpi build")
	}
	links, reductions := comm.LinkSizes, comm.AllReduceSizes
	if quick {
		links, reductions = comm.QuickLinkSizes, comm.QuickAllReduceSizes
	}
	if err := agreeOut(world, out, force); err != nil {
		return rankErr(world, err)
	}
	rep, err := comm.MeasureNetworkContext(ctx, world, links, reductions)
	// Every rank got through the measurement, or all agreed to stop: MPI
	// may be finalized (a rank that failed alone leaves that to mpirun).
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if err == nil && world.Rank() == 0 {
			if err = rep.Write(stdout); err == nil {
				err = writeModel(stdout, rep.Model, "network model", "--network", out, force)
			}
		}
		if cerr := world.Close(); err == nil {
			err = cerr
		}
	}
	return rankErr(world, err)
}

// agreeOut checks --out on rank 0, which writes it, and stops every rank
// (closing the world) when it cannot be written: the others must not wait
// in a measurement rank 0 has left, and their hosts may not even have its
// folder.
func agreeOut(world comm.Comm, out string, force bool) error {
	var err error
	var bad [1]float32
	if world.Rank() == 0 {
		if err = checkOut(out, force); err != nil {
			bad[0] = 1
		}
	}
	if aerr := world.AllReduce(bad[:]); aerr != nil {
		return errors.Join(err, aerr)
	}
	if bad[0] == 0 {
		return nil
	}
	if err == nil {
		err = errors.New("rank 0 cannot write --out")
	}
	// Every rank got here: MPI may be finalized.
	return errors.Join(err, world.Close())
}

// writeModel prints a measured model as JSON, or writes it to path
// atomically — a failed write leaves neither a truncated file under the
// name nor a temporary one, and what is at path is replaced only if it is
// a regular file (and force) — and says how train reads it (trainFlag).
func writeModel(stdout io.Writer, model any, what, trainFlag, path string, force bool) error {
	b, err := json.MarshalIndent(model, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the %s: %w", what, err)
	}
	b = append(b, '\n')
	if path == "" {
		_, err := stdout.Write(b)
		return err
	}
	if err := atomicfile.WriteFile(path, b, force); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s; use it with hetsgd train --time virtual %s %s\n", path, trainFlag, path)
	return err
}
