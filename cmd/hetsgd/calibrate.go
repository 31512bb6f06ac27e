package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hetsgd/hetsgd/engine"
)

func runCalibrate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("calibrate", "calibrate [--out FILE] [--quick]", stderr)
	out := fs.String("out", "", "write the cost model to `file` (default: print it)")
	quick := fs.Bool("quick", false, "measure a few shapes only")
	force := fs.Bool("force", false, "overwrite an existing --out file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out != "" && !*force {
		if _, err := os.Stat(*out); err == nil {
			return fmt.Errorf("%s already exists (choose another name, or overwrite it with --force)", *out)
		}
	}
	c, err := engine.Calibrate(*quick, stdout)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	b = append(b, '\n')
	if *out == "" {
		_, err := stdout.Write(b)
		return err
	}
	// Write beside the target and rename, so a failed write never leaves a
	// truncated cost model under the name.
	tmp := *out + ".partial"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, *out); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	fmt.Fprintf(stdout, "wrote %s; use it with hetsgd train --time virtual --cost %s\n", *out, *out)
	return nil
}
