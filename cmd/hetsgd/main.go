// Command hetsgd trains sparse multi-label models (extreme classification)
// and compares parallel SGD strategies. Run "hetsgd help" for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/internal/cpuprofile"
	"github.com/hetsgd/hetsgd/internal/memory"
	"github.com/hetsgd/hetsgd/internal/reexec"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/setting"
	"github.com/hetsgd/hetsgd/train"
)

// command is one subcommand of the tool.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"train", "train a model with a parallel SGD strategy and report P@k over the test set", runTrain},
		{"launch", "run a train job (under mpirun or not) and restart it from its last checkpoint when it fails", runLaunch},
		{"predict", "write each point's top labels under a trained model (a checkpoint or an exported .npz)", runPredict},
		{"eval", "score a trained model on a dataset: P@1/3/5, nDCG@1/3/5 and their propensity-scored forms", runEval},
		{"export", "export a checkpoint's model to a NumPy .npz archive", runExport},
		{"serve", "answer a trained model's predictions over HTTP (the Open Inference Protocol, KServe v2, and /predict)", runServe},
		{"plot", "draw run logs' metrics (P@k, nDCG@k, loss, batch sizes) against time, epochs or samples into an SVG and a PNG", runPlot},
		{"dashboard", "serve a live page of run logs (P@1, loss, per-device batch sizes and merges, settings), following logs being written", runDashboard},
		{"strategies", "list the parallel SGD strategies (-v: with their options)", runStrategies},
		{"tune", "compare strategies over a grid of learning rates and batches, at one shared rate and at each one's best", runTune},
		{"data", "describe or generate datasets (data stats, data gen)", runData},
		{"calibrate", "measure this machine's kernel times for the virtual clock's cost model", runCalibrate},
		{"gpus", "list the GPUs and CUDA libraries this binary finds, or say what is missing", runGPUs},
		{"step", "time one training step at a paper's shape, with this run's SGEMM peak and the step's roofline", runStep},
		{"bench", "reproduce the papers' experiments and write a report (tables, figures, logs)", runBench},
		{"version", "print the version", runVersion},
	}
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(mainCode()) }

// mainCode is the whole process, returning its exit status. The tool's tests
// start their own binary as the tool through it (see TestMain), which is
// how they run it under mpirun.
func mainCode() int {
	// An external BLAS may need its environment before it loads; under
	// ulimit -v, one malloc arena makes the room the same at every start.
	reexec.With(kernel.BLASEnv(), memory.StartEnv())
	stopProfile, err := cpuprofile.FromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hetsgd: %v\n", err)
		return 1
	}
	ctx, stop := notifyContext(context.Background())
	defer stop()
	out := &checkedWriter{w: os.Stdout}
	code := run(ctx, os.Args[1:], out, os.Stderr)
	if out.err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "hetsgd: writing standard output: %v\n", out.err)
		code = 1
	}
	if err := stopProfile(); err != nil {
		fmt.Fprintf(os.Stderr, "hetsgd: %v\n", err)
		code = max(code, 1)
	}
	return code
}

// stopSignals end a command cleanly: SIGINT is Ctrl-C, SIGTERM is how
// mpirun and job schedulers pass one on, SIGHUP comes with a closed
// terminal.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "interrupted by " + signalName(e.sig) }

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// exitCode is the shell's convention for a process ended by sig: 128 + its
// number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
func (e signalError) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// notifyContext returns a context cancelled, with a signalError as its
// cause, by the first of stopSignals. A second signal ends the process at
// once, for a user who will not wait for the clean stop; outputs are written
// atomically or line by line, so even then none is left half-written.
func notifyContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(signalError{sig})
			select {
			case sig := <-ch:
				fmt.Fprintf(os.Stderr, "hetsgd: %s again: stopping now\n", signalName(sig))
				os.Exit(signalError{sig}.exitCode())
			case <-done:
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// checkedWriter remembers the first write error of the standard output (a
// full disk, a closed pipe), so that a command whose results were lost does
// not exit 0.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

// errUsage marks an error whose message already says how to call the command.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := checkLaunch(c.name)
		if err == nil {
			err = errors.Join(kernel.CheckEnv(), memory.CheckEnv())
			memory.Govern()
		}
		if err == nil {
			err = c.run(ctx, args[1:], stdout, stderr)
		}
		var sig signalError
		switch {
		case err != nil && errors.As(context.Cause(ctx), &sig) &&
			(errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted)):
			// Stopped by a signal: say so, and exit as the shell expects of
			// a process the signal ended.
			fmt.Fprintf(stderr, "hetsgd %s: %s (%s)\n", c.name, message(err), sig)
			return sig.exitCode()
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			launch.NoteUsageError() // a launcher's restart would repeat it
			return 2
		}
		fmt.Fprintf(stderr, "hetsgd %s: %s\n", c.name, message(err))
		return 1
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "hetsgd: unknown command %q%s\n\n", args[0], setting.Suggest(args[0], names, ""))
	usage(stderr)
	launch.NoteUsageError()
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "hetsgd trains sparse multi-label models with parallel SGD strategies.\n\nUsage:\n  hetsgd <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun \"hetsgd <command> --help\" for a command's flags, \"hetsgd --version\" for the version.\n")
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	fmt.Fprintf(stdout, "hetsgd %s (%s, %s/%s; kernels: %s of %s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH,
		kernel.Impl(), strings.Join(kernel.Impls(), ", "))
	if b := kernel.BLAS(); b != "" {
		fmt.Fprintf(stdout, "BLAS: %s\n", b)
	}
	if bf := kernel.BF16Impl(); bf != "" {
		fmt.Fprintf(stdout, "bf16 products (--precision bf16): %s\n", bf)
	} else {
		fmt.Fprintf(stdout, "bf16 products (--precision bf16): none for the %s kernels (they need AVX512-BF16)\n", kernel.Impl())
	}
	transports := "in-process"
	if t := comm.Transports(); len(t) > 0 {
		transports += ", " + strings.Join(t, ", ")
	}
	fmt.Fprintf(stdout, "transports: %s\n", transports)
	return nil
}

// newFlagSet returns a flag set whose errors come back to the caller and whose
// usage text goes to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: hetsgd %s\n\nFlags:\n", synopsis)
		train.PrintFlags(stderr, fs)
	}
	return fs
}

// parseFlags parses args, which hold flags only (parseArgs allows
// arguments after them). A flag error is printed with the nearest flag
// names and where to find the flags (not the whole usage, which can be
// long), and returned as errUsage; --help prints the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "hetsgd %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// parseArgs is parseFlags for commands that take arguments after the flags.
func parseArgs(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		msg := message(err)
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			msg = fmt.Sprintf("unknown flag --%s%s", name, setting.Suggest(name, train.FlagNames(fs), "--"))
			if name == "version" {
				msg = "--version is the tool's, not a command's: hetsgd --version"
			}
		}
		msg = train.FlagValueMessage(msg)
		fmt.Fprintf(out, "hetsgd %s: %s\nRun \"hetsgd %s --help\" for the flags.\n", fs.Name(), msg, fs.Name())
		return errUsage
	}
	return nil
}
