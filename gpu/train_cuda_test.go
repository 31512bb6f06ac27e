//go:build cuda

package gpu_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/cuda"
	"github.com/hetsgd/hetsgd/cuda/cudatest"
	"github.com/hetsgd/hetsgd/train"
)

// runTrain runs hetsgd train's job in this process and returns its report.
func runTrain(t *testing.T, args ...string) string {
	t.Helper()
	var s train.Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	s.Register(fs)
	if err := fs.Parse(append([]string{"--progress", "off"}, args...)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := train.Run(context.Background(), &s, fs, nil, comm.Self(), train.Front{Stdout: &out, Stderr: io.Discard,
		Message: func(err error) string { return err.Error() }, Progress: func() (bool, error) { return false, nil }})
	if err != nil {
		t.Fatalf("train %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// scores are a report's evaluations' P@1.
func scores(report string) []float64 {
	var s []float64
	for _, line := range strings.Split(report, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[0] == "epoch" && f[4] == "P@1" {
			v, _ := strconv.ParseFloat(f[5], 64)
			s = append(s, v)
		}
	}
	return s
}

// hetsgd train --backend gpu trains as the host does: two devices of the
// sync strategy and of AdaCons (under the virtual clock), with dropout and
// Adam (the defaults), give the host's P@1 at each evaluation on Bibtex,
// to within 0.01 (the products' rounding differs, and the host fuses its
// update into the output layer's pass).
func TestTrainOnGPUAsOnHost(t *testing.T) {
	o := cudatest.Options(t)
	cudatest.GPU(t)
	t.Setenv(cuda.DriverEnv, o.Driver)
	t.Setenv(cuda.LibsEnv, o.Libs)
	for _, args := range [][]string{
		{"--strategy", "sync", "--devices", "2"},
		{"--strategy", "adacons", "--devices", "2", "--time", "virtual"},
	} {
		args = append(args, "--epochs", "0.3", "--eval-every", "0.15", "--eval-points", "500")
		host := scores(runTrain(t, args...))
		gpu := scores(runTrain(t, append(args, "--backend", "gpu")...))
		if len(host) < 2 || len(gpu) != len(host) {
			t.Fatalf("%v: P@1 on the host %v, on the GPU %v", args, host, gpu)
		}
		for i := range host {
			if math.Abs(host[i]-gpu[i]) > 0.01 {
				t.Errorf("%v: P@1 on the host %v, on the GPU %v", args, host, gpu)
			}
		}
	}
}
