package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/internal/bounded"
)

const (
	// EnvDir names the launcher's folder in a job's environment.
	EnvDir = "HETSGD_LAUNCH"
	// EnvRestart holds, in a restarted job's environment, the Restart it
	// recovers from (JSON).
	EnvRestart = "HETSGD_RESTART"

	progressFile = "progress.json"
	usageFile    = "usage" // NoteUsageError's mark
)

// NoteUsageError tells the launcher that started this process, if one
// did, that the job stops on an error in how it was called (its flags): a
// restart would repeat it. Its exit status, 2, does not say so alone: Go's
// runtime exits 2 too, on a panic or when memory runs out, which a restart
// may well get past.
func NoteUsageError() {
	if dir := os.Getenv(EnvDir); dir != "" {
		os.WriteFile(filepath.Join(dir, usageFile), nil, 0o644)
	}
}

// Progress is what a job's rank 0 tells the launcher of its progress
// (Reporter): how far it got, when its first step was, and where its last
// checkpoint was.
type Progress struct {
	Samples      int64   `json:"samples"`       // processed so far
	TrainSeconds float64 `json:"train_seconds"` // the run's clock
	// FirstStep is when the job's first step ended (Unix nanoseconds; 0:
	// not yet).
	FirstStep int64 `json:"first_step"`
	// Checkpoint and CheckpointSeconds are the samples and the run's clock
	// at its last checkpoint (Checkpoint −1: none yet).
	Checkpoint        int64   `json:"checkpoint"`
	CheckpointSeconds float64 `json:"checkpoint_seconds"`
}

// Restart is what a restarted job is told of the failure it recovers from.
type Restart struct {
	Attempt int    `json:"attempt"` // 1 for the first restart
	Failure string `json:"failure"` // how the job ended: "exit status 137", "signal: killed"
	// FailedAt is when the launcher saw the job end (Unix nanoseconds).
	FailedAt int64 `json:"failed_at"`
	// LostSamples and LostSeconds are the work done after the job's last
	// checkpoint, lost (as far as its last report, at most reportEvery old,
	// tells), in samples and in training seconds.
	LostSamples int64   `json:"lost_samples"`
	LostSeconds float64 `json:"lost_seconds"`
	// Ranks is how many ranks the restart runs on (0: one process).
	Ranks int `json:"ranks,omitempty"`
}

// RestartFromEnv returns the Restart of this process's environment, nil
// when it is not a restarted job.
func RestartFromEnv() (*Restart, error) {
	v := os.Getenv(EnvRestart)
	if v == "" {
		return nil, nil
	}
	var r Restart
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("launch: $%s: %w", EnvRestart, err)
	}
	return &r, nil
}

// reportEvery is how often a job reports its progress at most: a failure
// loses what it did since its last report from the count of lost work.
const reportEvery = 200 * time.Millisecond

// Reporter writes a job's progress into the launcher's folder. A nil
// Reporter (no launcher) does nothing.
type Reporter struct {
	dir  string
	p    Progress
	last time.Time
}

// NewReporter returns the reporter of the launcher that started this
// process, nil when none did.
func NewReporter() *Reporter {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return nil
	}
	return &Reporter{dir: dir, p: Progress{Checkpoint: -1}}
}

// Resumed says the job took up from a checkpoint of samples at the run's
// time seconds: its last checkpoint until it writes another.
func (r *Reporter) Resumed(samples int64, seconds float64) {
	if r != nil {
		r.p.Checkpoint, r.p.CheckpointSeconds = samples, seconds
	}
}

// Step reports the job's progress after a batch: at once after its first,
// then at most every reportEvery. It must be cheap: it runs after every
// batch.
func (r *Reporter) Step(samples int64, seconds float64) {
	if r == nil {
		return
	}
	r.p.Samples, r.p.TrainSeconds = samples, seconds
	now := time.Now()
	if r.p.FirstStep == 0 {
		r.p.FirstStep = now.UnixNano()
	} else if now.Sub(r.last) < reportEvery {
		return
	}
	r.last = now
	r.write()
}

// Checkpoint reports a checkpoint written after samples, at the run's time
// seconds.
func (r *Reporter) Checkpoint(samples int64, seconds float64) {
	if r == nil {
		return
	}
	r.p.Checkpoint, r.p.CheckpointSeconds = samples, seconds
	r.p.Samples, r.p.TrainSeconds = max(r.p.Samples, samples), max(r.p.TrainSeconds, seconds)
	r.write()
}

// write puts the progress in place; a failure only costs the launcher its
// news (it then counts the job as not started).
func (r *Reporter) write() {
	b, err := json.Marshal(r.p)
	if err == nil {
		atomicfile.WriteFile(filepath.Join(r.dir, progressFile), b, true)
	}
}

// readProgress reads the progress a job reported into dir (nil: none).
func readProgress(dir string) *Progress {
	b, err := bounded.ReadFile(filepath.Join(dir, progressFile), 1<<16, "a job's progress")
	if err != nil {
		return nil
	}
	var p Progress
	if json.Unmarshal(b, &p) != nil {
		return nil
	}
	return &p
}

// Job is a training job that Run restarts when it fails.
type Job struct {
	// Command is the job's first command: mpirun … hetsgd train …, or
	// hetsgd train ….
	Command []string
	// Next returns the command of restart attempt (1, 2, …) after failure
	// f; started says whether the attempt that failed got to its first
	// step. An error ends Run with it.
	Next func(attempt int, f *Restart, started bool) ([]string, error)
	// MaxRestarts is how many restarts Run makes at most.
	MaxRestarts int
	// Grace is how long a job Run stops (its context ended) has between
	// SIGTERM and SIGKILL.
	Grace time.Duration
	// Before, when set, is called before each attempt starts; an error
	// ends Run with it, the attempt not started (Command.Before checks the
	// job's folder and notes its log).
	Before func() error
	// MPI says the command runs under mpirun: its stderr is then read, as
	// it passes through unchanged, for mpirun's own refusals (see scan.go).
	// Otherwise the job's stderr is handed to it as it is (a terminal
	// stays one, and the job draws its progress bar).
	MPI bool
	// StopTimeout and HangTimeout are how long one of the job's processes
	// may stay stopped, and the job go without progress after its first
	// step, before Run takes it for failed (0: never; see watch.go).
	StopTimeout, HangTimeout time.Duration
	// Checkpoint is the job's checkpoint folder, for the messages that say
	// how to go on.
	Checkpoint     string
	Stdout, Stderr io.Writer
	// Say receives the launcher's account of each failure and restart (a
	// line, without its newline).
	Say func(line string)
}

// ErrStopped is wrapped by Run's error when its context ended the job.
var ErrStopped = errors.New("launch: stopped")

// Run runs the job, restarting it as Job says after each failure, and
// returns nil once an attempt ends well; an error when its restarts are
// spent (naming each failure), at once when a restart cannot fix a
// failure (naming the fix; see classify), when Next or Before gives one,
// or when ctx ends (wrapping ErrStopped, after the job was stopped). Every
// process of every attempt has ended when it returns.
func (j *Job) Run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "hetsgd-launch-")
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	defer os.RemoveAll(dir)
	say := j.Say
	if say == nil {
		say = func(string) {}
	}
	cmd, env := j.Command, []string{EnvDir + "=" + dir}
	var failures []string
	for attempt := 0; ; attempt++ {
		os.Remove(filepath.Join(dir, progressFile))
		os.Remove(filepath.Join(dir, usageFile))
		if j.Before != nil {
			if err := j.Before(); err != nil {
				return err
			}
		}
		started := time.Now()
		watched, sc, err := j.runOnce(ctx, cmd, env, dir)
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrStopped, context.Cause(ctx))
		}
		if err == nil {
			return nil
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fmt.Errorf("launch: starting %s: %w", cmd[0], err) // not a failure of the job's
		}
		p := readProgress(dir)
		began := p != nil && p.FirstStep != 0
		_, usage := os.Stat(filepath.Join(dir, usageFile))
		c := classify(ee, began, usage == nil, watched, sc, j.Checkpoint)
		f := &Restart{Attempt: attempt + 1, Failure: c.text, FailedAt: time.Now().UnixNano()}
		if p != nil {
			// The work since the last checkpoint, or, before the first,
			// since the attempt's start: the checkpoint it resumed (which
			// the job reports as its last), or the run's start.
			from, fromSeconds := max(0, p.Checkpoint), max(0, p.CheckpointSeconds)
			f.LostSamples = max(0, p.Samples-from)
			f.LostSeconds = max(0, p.TrainSeconds-fromSeconds)
		}
		line := fmt.Sprintf("attempt %d failed (%s) after %.1f s", attempt+1, f.Failure, time.Since(started).Seconds())
		switch {
		case !began:
			line += ", before its first step"
		case p.Checkpoint >= 0:
			line += fmt.Sprintf(", at %d samples: %d samples (%.2f s of training) since its last checkpoint are lost", p.Samples, f.LostSamples, f.LostSeconds)
		default:
			line += fmt.Sprintf(", at %d samples, before its first checkpoint: all %d samples (%.2f s of training) since its start are lost", p.Samples, f.LostSamples, f.LostSeconds)
		}
		failures = append(failures, line)
		say(line)
		if c.final {
			return fmt.Errorf("launch: not restarting the job: %s: %s", c.why, c.fix)
		}
		if attempt >= j.MaxRestarts {
			return fmt.Errorf("launch: the job failed %d times; its restarts are spent (%d): %s", attempt+1, j.MaxRestarts, strings.Join(failures, "; "))
		}
		if cmd, err = j.Next(attempt+1, f, began); err != nil {
			return err
		}
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		env = []string{EnvDir + "=" + dir, EnvRestart + "=" + string(b)}
		say(fmt.Sprintf("restart %d of %d: %s", attempt+1, j.MaxRestarts, strings.Join(cmd, " ")))
	}
}

// runOnce runs one attempt in a session of its own (see proc_unix.go),
// watched (watch), and ends the whole of it when the attempt ends or ctx
// does. It returns what the watch found when it ended the attempt, under
// mpirun what mpirun said, and how the attempt ended.
func (j *Job) runOnce(ctx context.Context, cmd, env []string, dir string) (*cause, *scanner, error) {
	// A program that cannot be found fails the launcher, not an attempt.
	if _, err := exec.LookPath(cmd[0]); err != nil {
		return nil, nil, err
	}
	lead := leaderCommand(cmd)
	c := exec.Command(lead[0], lead[1:]...)
	c.Stdout, c.Stderr = j.Stdout, j.Stderr
	var sc *scanner
	if j.MPI {
		sc = &scanner{w: j.Stderr}
		if j.Stderr == nil {
			sc.w = io.Discard
		}
		c.Stderr = sc
	}
	c.Env = append(os.Environ(), env...)
	// Output that is not a file goes through pipes, and Wait waits for
	// every holder of them to close them: a rank left over when mpirun died
	// would hold the launcher for as long as it lived, before killJob below
	// could end it. Once the leader has exited, the rest has WaitDelay.
	c.WaitDelay = time.Second
	ownSession(c)
	if err := c.Start(); err != nil {
		return nil, sc, err
	}
	done := make(chan error, 1)
	go func() {
		err := c.Wait()
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil // the leader exited 0; what outlived it is ended below
		}
		done <- err
	}()
	var watched *cause
	stopWatch, watchEnded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchEnded)
		watched = j.watch(c, dir, stopWatch)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// mpirun passes SIGTERM on to the ranks, and the job writes its
		// last records; what has not ended after the grace is killed.
		terminate(c)
		select {
		case err = <-done:
		case <-time.After(j.Grace):
			killJob(c)
			err = <-done
		}
	}
	close(stopWatch)
	<-watchEnded
	killJob(c) // whatever of the attempt is left: a rank mpirun did not end
	return watched, sc, err
}
