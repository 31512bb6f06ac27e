package launch

import (
	"fmt"
	"os/exec"
	"time"
)

// Watching a job that neither ends nor works. A process stopped by SIGSTOP
// (or SIGTSTP, SIGTTIN, SIGTTOU) does not end, and mpirun does not notice
// it: the other ranks wait for it in their next collective for ever. So
// the launcher looks at the job's processes on this host (its session,
// jobProcs) every pollEvery: a job one of whose processes is found stopped
// (state T) at every look for StopTimeout has failed; it is killed and
// restarted, and the launcher says which process was stopped. A stop by a
// debugger (state t) is left alone: someone is looking at the process.
//
// Processes on other hosts are not seen there. What sees them — and a job
// hung any other way: a deadlock, a rank whose network link went silent —
// is the job's progress: a job that reported its first step and then no
// progress for HangTimeout has failed too. A job reports no progress while
// it evaluates or writes a checkpoint, minutes on a large set, so
// HangTimeout must be longer than those; it is off unless set.

// watchEvery is how often the watch looks at the job: a quarter of the
// shortest bound, at most a second, at least 10 ms.
func watchEvery(bounds ...time.Duration) time.Duration {
	every := time.Second
	for _, b := range bounds {
		if b > 0 {
			every = min(every, b/4)
		}
	}
	return max(every, 10*time.Millisecond)
}

// watch looks at the attempt c (its progress reported into dir) until stop
// is closed, and kills it when it finds it stopped or hung (see above),
// returning why; nil when it did not kill it.
func (j *Job) watch(c *exec.Cmd, dir string, stop <-chan struct{}) *cause {
	if j.StopTimeout <= 0 && j.HangTimeout <= 0 {
		return nil
	}
	t := time.NewTicker(watchEvery(j.StopTimeout, j.HangTimeout))
	defer t.Stop()
	var stoppedSince, lastChange time.Time
	lastSamples := int64(-1)
	for {
		select {
		case <-stop:
			return nil
		case now := <-t.C:
			if j.StopTimeout > 0 {
				procs, _ := jobProcs(c.Process.Pid)
				var stopped *proc
				for i := range procs {
					if procs[i].state == 'T' {
						stopped = &procs[i]
						break
					}
				}
				switch {
				case stopped == nil:
					stoppedSince = time.Time{}
				case stoppedSince.IsZero():
					stoppedSince = now
				case now.Sub(stoppedSince) >= j.StopTimeout:
					killJob(c)
					return &cause{text: fmt.Sprintf("stopped: process %d (%s) held by SIGSTOP or SIGTSTP for %s, ended by the launcher", stopped.pid, stopped.comm, seconds(now.Sub(stoppedSince)))}
				}
			}
			if p := readProgress(dir); j.HangTimeout > 0 && p != nil && p.FirstStep != 0 {
				if p.Samples != lastSamples {
					lastSamples, lastChange = p.Samples, now
				} else if now.Sub(lastChange) >= j.HangTimeout {
					killJob(c)
					return &cause{text: fmt.Sprintf("hung: no progress for %s at %d samples, ended by the launcher", seconds(now.Sub(lastChange)), p.Samples)}
				}
			}
		}
	}
}

// seconds writes a duration to a tenth of a second: "30.0 s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
