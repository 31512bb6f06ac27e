package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/engine"
)

func runCalibrate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("calibrate", "calibrate [--out FILE] [--quick] | mpirun -np N hetsgd calibrate --network [--out FILE]", stderr)
	out := fs.String("out", "", "write the cost model (with --network: the network model) to `file` (default: print it)")
	quick := fs.Bool("quick", false, "measure a few shapes (message sizes) only")
	force := fs.Bool("force", false, "overwrite an existing --out file")
	network := fs.Bool("network", false, "under mpirun (the mpi build): measure the latency and bandwidth between the ranks, for --time virtual --network")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out != "" && !*force {
		if _, err := os.Stat(*out); err == nil {
			return fmt.Errorf("%s already exists (choose another name, or overwrite it with --force)", *out)
		}
	}
	if *network {
		return calibrateNetwork(*quick, *out, stdout)
	}
	if how := comm.Launched(); how != "" {
		return fmt.Errorf("the cost model is measured in one process: start it without mpirun, or measure the network with --network (started by a process manager: %s)", how)
	}
	c, err := engine.Calibrate(*quick, stdout)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := writeResult(*out, append(b, '\n'), stdout); err != nil {
		return err
	}
	if *out != "" {
		fmt.Fprintf(stdout, "wrote %s; use it with hetsgd train --time virtual --cost %s\n", *out, *out)
	}
	return nil
}

// calibrateNetwork measures the links of the MPI job this process is a rank
// of; rank 0 reports and writes the model.
func calibrateNetwork(quick bool, out string, stdout io.Writer) error {
	world, err := comm.OpenWorld()
	if err != nil {
		return err
	}
	if world.Size() < 2 {
		return errors.New("--network measures the links between the ranks of an MPI job: run it as mpirun -np 2 hetsgd calibrate --network (or more ranks, across the hosts to measure), with the mpi build")
	}
	links, reductions := comm.LinkSizes, comm.AllReduceSizes
	if quick {
		links, reductions = []int{8, 64 << 10, 1 << 20, 4 << 20}, []int{4 << 20}
	}
	rep, err := comm.MeasureNetwork(world, links, reductions)
	if err != nil {
		return rankErr(world, err)
	}
	if world.Rank() == 0 {
		printNetwork(stdout, rep, world.Size())
		b, _ := json.MarshalIndent(rep.Model, "", "  ")
		if err := writeResult(out, append(b, '\n'), stdout); err != nil {
			return err
		}
		if out != "" {
			fmt.Fprintf(stdout, "wrote %s; use it with hetsgd train --time virtual --network %s\n", out, out)
		}
	}
	return world.Close()
}

func printNetwork(w io.Writer, rep *comm.NetworkReport, ranks int) {
	fmt.Fprintf(w, "%d ranks on %d host(s)\n", ranks, rep.Hosts)
	for _, l := range []struct {
		name string
		fit  *comm.LinkFit
	}{{"within a host", rep.Intra}, {"between hosts", rep.Inter}} {
		if l.fit == nil {
			continue
		}
		fmt.Fprintf(w, "\nlink %s (ranks %d and %d): latency %.2f µs, bandwidth %.2f GB/s\n", l.name, l.fit.A, l.fit.B, l.fit.Latency*1e6, l.fit.Bandwidth/1e9)
		fmt.Fprintf(w, "%12s  %14s  %14s\n", "bytes", "one way (µs)", "fit (µs)")
		for i, n := range l.fit.Sizes {
			fmt.Fprintf(w, "%12d  %14.2f  %14.2f\n", n, l.fit.Seconds[i]*1e6, l.fit.Message(n)*1e6)
		}
	}
	if rep.Inter == nil {
		fmt.Fprintf(w, "\nno rank runs on another host: the model's link between nodes is the one within a host\n")
	}
	fmt.Fprintf(w, "\nall-reduce of %d ranks   %12s  %12s  %9s  %14s\n", ranks, "hetsgd (ms)", "MPI (ms)", "overhead", "ring model (ms)")
	for _, t := range rep.AllReduce {
		over := "n/a"
		if t.Raw > 0 {
			over = fmt.Sprintf("%+.1f%%", 100*(t.Go/t.Raw-1))
		}
		fmt.Fprintf(w, "%10.1f MB             %12.3f  %12.3f  %9s  %14.3f\n", float64(t.Bytes)/(1<<20), t.Go*1e3, t.Raw*1e3, over, t.Model*1e3)
	}
	fmt.Fprintln(w)
}

// writeResult prints b, or writes it to path beside the target and renames
// it, so that a failed write never leaves a truncated file under the name.
func writeResult(path string, b []byte, stdout io.Writer) error {
	if path == "" {
		_, err := stdout.Write(b)
		return err
	}
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}
