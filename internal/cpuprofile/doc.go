// Package cpuprofile profiles the whole of a command's process when its
// environment asks for it: HETSGD_CPUPROFILE=FILE makes FromEnv start Go's
// CPU profiler, and the function it returns stops it and writes FILE (read
// it with `go tool pprof BINARY FILE`). It is how the kernels' and the
// sampled layer's time is split among their parts on a real run, where a
// benchmark of one kernel cannot show what the rest of a step costs.
//
// An environment variable and not a flag: the profile belongs to the
// process, not to the run's settings, and reaches every command (train,
// tune, bench) and every rank mpirun starts alike: each rank writes
// FILE.rank-N (its rank in the job). The first process of the tool that
// reads it takes it: the processes it starts itself (hetsgd launch's
// attempts) are not profiled. The file is written whole at
// the end, under a temporary name until then, and never replaces a file
// that exists, so that a profile cannot overwrite an input or an earlier
// profile. A process ended by a second signal or killed writes none.
package cpuprofile
