package comm

import (
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Opener opens the world of a job that a process manager (mpirun)
// launched: one Comm holding every rank.
type Opener func() (Comm, error)

var (
	transportMu sync.Mutex
	transports  = map[string]Opener{}
)

// Register makes a transport available by name ("mpi"), from the init of
// its package. It panics when the name is taken.
func Register(name string, open Opener) {
	transportMu.Lock()
	defer transportMu.Unlock()
	if _, dup := transports[name]; dup {
		panic("comm: Register called twice for " + name)
	}
	transports[name] = open
}

// Transports lists the registered transports, sorted.
func Transports() []string {
	transportMu.Lock()
	defer transportMu.Unlock()
	var names []string
	for n := range transports {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// launchVars are the variables a process manager sets in every rank it
// starts: OpenMPI's mpirun, PMIx and Hydra/Slurm's PMI.
var launchVars = []string{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}

// Launched returns the variable, as NAME=value, that shows this process was
// started by a process manager as one rank of a parallel job; "" when it was
// started on its own.
func Launched() string {
	for _, v := range launchVars {
		if s, ok := os.LookupEnv(v); ok {
			return v + "=" + s
		}
	}
	return ""
}

// LocalSize returns the number of ranks the process manager started on this
// host (1 when started on its own), so that ranks can share the cores.
func LocalSize() int {
	for _, v := range []string{"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"} {
		if n, err := strconv.Atoi(os.Getenv(v)); err == nil && n >= 1 {
			return n
		}
	}
	return 1
}

// ErrNoMPI is wrapped by the error of OpenWorld in a process that mpirun
// started but that was built without the MPI transport.
var ErrNoMPI = fmt.Errorf("comm: this hetsgd was built without MPI: rebuild it with 'go build -tags mpi ./cmd/hetsgd' (needs libopenmpi-dev)")

// OpenWorld returns the world this process belongs to: Self when it was
// started on its own, the MPI transport's world when mpirun started it, and
// an error wrapping ErrNoMPI when mpirun started a binary without MPI — so
// that N copies never train N independent models believing they are one job.
func OpenWorld() (Comm, error) {
	how := Launched()
	if how == "" {
		return Self(), nil
	}
	transportMu.Lock()
	open := transports["mpi"]
	transportMu.Unlock()
	if open == nil {
		return nil, fmt.Errorf("%w (started by a process manager: %s)", ErrNoMPI, how)
	}
	return open()
}

// Fingerprint is a named digest that every rank of a job must share: the
// binary it runs, its settings, its data.
type Fingerprint struct {
	Name string
	Sum  [32]byte
}

// chunk is the number of bits of a digest carried by one float64 of
// AllGather: integers below 2^53 are exact.
const chunk = 48

// Agree checks that every rank holds the same fingerprints, in the same
// order, and otherwise returns, on every rank, an error naming the first rank
// that differs from rank 0 and in what. Every rank must call it.
func Agree(c Comm, fps []Fingerprint) error {
	per := (256 + chunk - 1) / chunk
	mine := make([]float64, per*len(fps))
	for i, fp := range fps {
		encode(mine[i*per:(i+1)*per], fp.Sum)
	}
	all := make([]float64, len(mine)*c.Size())
	if err := c.AllGather(all, mine); err != nil {
		return fmt.Errorf("comm: comparing the ranks' %s: %w", names(fps), err)
	}
	root := all[:len(mine)]
	for r := 1; r < c.Size(); r++ {
		theirs := all[r*len(mine) : (r+1)*len(mine)]
		for i, fp := range fps {
			a, b := root[i*per:(i+1)*per], theirs[i*per:(i+1)*per]
			for j := range a {
				if a[j] != b[j] {
					return fmt.Errorf("comm: rank %d differs from rank 0 in its %s (%s… against %s…): every rank must run the same binary with the same settings on the same data",
						r, fp.Name, short(decode(b)), short(decode(a)))
				}
			}
		}
	}
	return nil
}

func names(fps []Fingerprint) string {
	var s []string
	for _, fp := range fps {
		s = append(s, fp.Name)
	}
	return strings.Join(s, ", ")
}

func encode(dst []float64, sum [32]byte) {
	for i := range dst {
		var v uint64
		for b := 0; b < chunk; b++ {
			bit := i*chunk + b
			if bit < 256 && sum[bit/8]&(1<<(bit%8)) != 0 {
				v |= 1 << b
			}
		}
		dst[i] = float64(v)
	}
}

func decode(src []float64) [32]byte {
	var sum [32]byte
	for i, f := range src {
		v := uint64(f)
		for b := 0; b < chunk; b++ {
			if bit := i*chunk + b; bit < 256 && v&(1<<b) != 0 {
				sum[bit/8] |= 1 << (bit % 8)
			}
		}
	}
	return sum
}

func short(sum [32]byte) string { return hex.EncodeToString(sum[:6]) }
