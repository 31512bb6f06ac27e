// Package launch runs a training job and, when it fails — a rank killed, a
// machine lost, a process that stalled and was ended — starts it again
// from its last checkpoint, up to a number of times: torchrun's
// --max-restarts, for a job under mpirun (or in one process).
//
// A Job is a command (mpirun … hetsgd train …, or hetsgd train …) and a
// function that says how to restart it after a failure (hetsgd launch
// resumes the job's checkpoint folder, on fewer ranks when a restart
// cannot start). Command is that function for a training job's command
// line: it knows how a command line and mpirun's rank count are written,
// and its caller tells it the training program's flags; before each
// attempt it checks that the checkpoint folder is the job's to use, and it
// sets aside only a log its job wrote.
//
// Run restarts only what a restart can fix. A usage error, a refusal of the
// job's own before its first step (settings, data, folder), a deliberate
// stop (SIGINT, SIGTERM, SIGHUP) and mpirun's own refusals (too few slots,
// a program it cannot run) end it at once, naming the fix (classify; how
// it learns why a job failed is said in scan.go).
//
// Run starts the command in a session of its own, so that it can end the
// whole of it — mpirun and every rank on this host, whatever process
// group each is in — whatever happens: when the job fails, before a
// restart, and when Run's context ends (SIGTERM first, so that mpirun
// tells the ranks and the job writes its last records, then SIGKILL after
// a grace period). No process of the job outlives Run, nor, through a
// parent-death signal (Linux), the launcher killed outright (proc_unix.go).
// Run also watches the job: one with a process stopped (SIGSTOP) for
// StopTimeout, or without progress for HangTimeout, has failed, and is
// ended and restarted (watch.go).
//
// The job and the launcher talk through a folder of the launcher's (the
// environment variable HETSGD_LAUNCH names it): the job's rank 0 writes its
// progress there (Progress), from which Run tells a job that started from
// one that failed before its first step, and how much work a failure lost
// (since the last checkpoint, or since the attempt's start); and a
// restarted job reads what it restarts from (Restart, in HETSGD_RESTART),
// to write it into its run log.
package launch
