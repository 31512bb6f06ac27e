package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/runlog"
	"github.com/hetsgd/hetsgd/workload"
)

// ShareThreads sets the cores a run computes on. --threads n sizes the
// kernels' pool at n workers and runs the process's Go code on n
// processors (GOMAXPROCS), so that n is every core the run uses: the
// background table builds of a sampled layer, on a pool of their own,
// share those n cores with the training rather than take one more. When
// --threads leaves the choice to the tool, it gives each rank of this host
// its share of the cores: mpirun's ranks run side by side.
func ShareThreads(threads int) {
	if threads > 0 {
		kernel.SetThreads(threads)
		runtime.GOMAXPROCS(threads)
		return
	}
	if local := comm.LocalSize(); local > 1 {
		kernel.SetThreads(max(1, runtime.NumCPU()/local))
	}
}

// binarySum is the digest of the running executable.
func binarySum() ([32]byte, error) {
	path, err := os.Executable()
	if err != nil {
		return [32]byte{}, fmt.Errorf("finding this executable: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, fmt.Errorf("reading this executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, fmt.Errorf("reading this executable: %w", err)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// AgreeRanks checks, before any work, that every rank runs the same binary
// with the same settings on the same data, and names the rank that does not.
// Settings are the run log's config record without what may differ from
// host to host (paths, the kernels and threads a machine picks, times).
func AgreeRanks(world comm.Comm, rec runlog.Config, w engine.Workload) error {
	bin, err := binarySum()
	if err != nil {
		return err
	}
	rec.Time, rec.LoadSeconds, rec.Data, rec.Train, rec.Test = "", 0, "", "", ""
	rec.Threads, rec.Kernel, rec.BLAS, rec.CPUs = 0, "", "", 0
	digest := rec.DataDigest
	rec.DataDigest = "" // compared on its own, to name it
	settings, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	fps := []comm.Fingerprint{{Name: "binary", Sum: bin}, {Name: "settings", Sum: sha256.Sum256(settings)}}
	if digest != "" {
		fps = append(fps, comm.Fingerprint{Name: "data", Sum: sha256.Sum256([]byte(digest))})
	}
	return comm.Agree(world, fps)
}

// DataDigest is the digest of a workload's data as the run log's config
// record holds it: SHA-256 over the training and test sets' fingerprints,
// in hex.
func DataDigest(x *workload.XML) string {
	a, b := x.Train.Fingerprint(), x.Test.Fingerprint()
	sum := sha256.Sum256(append(a[:], b[:]...))
	return hex.EncodeToString(sum[:])
}
