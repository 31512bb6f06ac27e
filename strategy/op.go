package strategy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// An Op is an algorithm's arithmetic on the model's vectors: what one of a
// strategy's Collective, Query or Commit actions does, and the state it
// keeps for it. The strategy decides when and with which parameters; the
// op does the sums, on every rank of a run, with the vectors and the
// communication a Host lends it — the shape of a DDP communication hook,
// which owns its aggregation and its state. An engine knows no op by name:
// an action names its op (Action.Op), and the engine finds it here.
//
// An op implements Op and one of Collector (a Collective), Measurer (a
// Query) or Committer (a Commit). Ops are registered from the init of the
// package of the strategy that uses them, with RegisterOp; Merge and the
// stock ops of this package serve several strategies.
type Op interface {
	// Format writes the action on one line as a transcript shows it, its
	// op's name first ("center-sync a=0.25 gamma=0.9").
	Format(a *Action) string
	// Cost prices one action in an engine's primitives, for a clock that
	// simulates time.
	Cost(a *Action) Cost
	// Check reports an action the op cannot carry out on a run of n
	// devices (a parameter out of its range): a strategy's bug, which the
	// conformance suite looks for.
	Check(a *Action, n int) error
}

// Cost is what one action of an op costs, in the engine's primitives:
// all-reduces of a model-sized vector, bytes per device all-gathered,
// element-wise passes over the model, each costing what an optimizer's
// update of a replica does (passes run on every device in parallel), and,
// for a commit, model-sized messages between the worker and θ's rank,
// queued on that rank's link before the worker's next batch.
//
// GatherModel prices an all-gather of that fraction of the model's bytes
// from every device (what devices that send compressed values whose sum
// cannot stay compressed exchange: each receives every other's).
//
// An op that overlaps its communication with the devices' computing
// (Host.IAllReduce) says so with Started, StartedGather and Awaits: the
// all-reduces and all-gathers it starts and leaves in flight are carried
// by the network while the devices go on with their batches, and a later
// action of the op that Awaits them first waits for what is left of them.
// A fraction of an all-reduce is one all-reduce of that fraction of the
// model's bytes (a fragment of it).
type Cost struct {
	AllReduces    float64
	Gather        int
	GatherModel   float64
	Passes        float64
	Transfers     float64
	Started       float64
	StartedGather float64
	Awaits        bool
}

// GradientUser is an op that uses the gradients the devices computed in
// Gradient mode and have not applied: it reads them (a query of them, or a
// step that combines them), and it applies them, through the devices'
// optimizers, when applies. A strategy must have every device hold such a
// gradient when it emits the op's action; after an op that applies them,
// none does.
type GradientUser interface {
	Gradients(a *Action) (reads, applies bool)
}

// An AnswerSampler is a Measurer that says what its answers look like,
// for the conformance suite (strategytest) to send the strategy in the
// engine's place: values and second, one per device of the job (NaN for a
// device gone), drawn from rng, with now and then the rare answers the
// strategy must survive (a zero gradient, say). With mayNegative it may
// send answers that give the strategy negative weights, and with
// mustNegative it must send one now; it returns whether it sent one. A
// Measurer that is none is answered with positive numbers of several sizes.
type AnswerSampler interface {
	Measurer
	SampleAnswer(rng *rand.Rand, gone []bool, mayNegative, mustNegative bool, values, second []float64) (negative bool)
}

// Collector is an op of a Collective action: every device of the run is
// idle, and Collect runs on every rank at once.
type Collector interface {
	Op
	Collect(h Host, a *Action) error
}

// Measurer is an op of a Query action: Measure runs on every rank at once,
// every device idle, and writes two values for each of the rank's replicas
// in the run, in the order Host.Replicas gives them, into values and second
// (as long as that list). The engine gathers them from every rank and
// answers the strategy with an Answer event, with NaN for the devices that
// left. In a run without vectors (Host.Center is nil: timing only) the
// replicas have none either, and Measure answers what a run with equal
// replicas and gradients would.
type Measurer interface {
	Op
	Measure(h Host, a *Action, values, second []float64) error
}

// Committer is an op of a Commit action: how a worker's update reaches the
// centre θ, which one rank holds. The worker's rank turns what the device
// computed into the update (Delta); θ's rank applies it (Apply). Delta's
// replica r computed its batch on its copy of the centre (a Pull) or took
// local steps from it; theta is the centre as it is now when NeedsCenter
// asks for it, else nil. Delta writes the update over r's gradient and
// returns a statistic of the commit for the run log (its median scaling
// factor), or NaN. Apply receives that vector.
//
// A Committer may also be a LocalCommitter, for the fast path when the
// device and θ share a rank, and a Restarter.
type Committer interface {
	Op
	NeedsCenter(a *Action) bool
	Delta(h Host, r Replica, a *Action, theta []float32) float64
	Apply(h Host, a *Action, update []float32)
}

// LocalCommitter does Delta and Apply in one pass, when the device and θ
// are on the same rank (θ is h.Center()); it must leave θ as they would.
type LocalCommitter interface {
	CommitLocal(h Host, r Replica, a *Action) float64
}

// Restarter is a commit after which the worker continues from the centre
// the commit produced: Restart runs on the worker's rank with θ as Apply
// left it (sent to it when θ is elsewhere).
type Restarter interface {
	Restart(h Host, r Replica, a *Action, theta []float32)
}

// Host is what an engine lends an op on one rank: the rank's replicas, its
// copy of the centre model, state vectors it keeps and checkpoints for the
// op, and reductions over the ranks.
type Host interface {
	// Rank and Ranks place this rank in the run (0 and 1 in one process).
	Rank() int
	Ranks() int
	// Replicas are this rank's devices still in the run. The list is valid
	// until the next call. Live counts the devices in the run on every rank.
	Replicas() []Replica
	Live() int
	// Center is the rank's copy of the centre model (w̄, z or θ), equal on
	// every rank; nil in a run without vectors. Prev is the centre before
	// the last Advance.
	Center() []float32
	Prev() []float32
	// Scratch is a model-sized vector free for the call.
	Scratch() []float32
	// Advance makes Scratch the centre and the centre Prev.
	Advance()
	// CenterState is a model-sized vector the engine keeps beside the
	// centre for the op, zero at its first use, saved in checkpoints and
	// kept when a run resumes on another number of devices.
	CenterState() []float32
	// AllReduce sums v over the ranks, in place: IAllReduce's Work, waited
	// for.
	AllReduce(v []float32) error
	// IAllReduce starts summing v over the ranks, in place, and returns at
	// once, as c10d's all_reduce with async_op does: the op goes on, the
	// devices may compute, and v belongs to the reduction until its Work
	// completes. Before a checkpoint the engine completes the Works in
	// flight on the rank that writes it (each completes only once every
	// rank's part is in); an op that keeps a sum in flight across actions
	// keeps it in Pending, which the checkpoint saves, so that a resumed op
	// (with no Work) finds the sum there.
	IAllReduce(v []float32) (Work, error)
	// Pending is a model-sized vector the engine keeps beside the centre
	// for an op's reductions in flight, zero at its first use, saved in
	// checkpoints once every Work in flight is complete.
	Pending() []float32
	// WeightedAllReduce sets out to Σ w[i]·vecs[i] summed over the ranks.
	WeightedAllReduce(out []float32, w []float32, vecs [][]float32) error
	// Seed is the run's seed, for an op's own random choices.
	Seed() uint64
}

// Work is a collective in flight (Host.IAllReduce).
type Work interface {
	// Wait returns once the collective has completed, with its error.
	Wait() error
}

// Replica is one device as an op sees it.
type Replica interface {
	ID() int
	// Params and Grad are the replica w_i and the gradient the device last
	// computed on it (nil in a run without vectors).
	Params() []float32
	Grad() []float32
	// State is a model-sized vector the engine keeps for the op on this
	// device, zero at its first use, saved in checkpoints (dropped when a
	// run resumes on another number of devices).
	State() []float32
	// Step applies g at rate lr with the device's optimizer. The device's
	// own gradient (Grad) is applied as its batch's step would have been,
	// under the workload's lazy rule where it has one (only the rows the
	// batch touched); any other vector reaches every weight.
	Step(g []float32, lr float32)
}

var ops = map[string]func() Op{}

// RegisterOp makes an op available by name to the actions that name it:
// newOp returns one for a rank (an op keeps its state per rank). It panics
// when the name is taken or empty, as Register does.
func RegisterOp(name string, newOp func() Op) {
	mu.Lock()
	defer mu.Unlock()
	if name == "" || newOp == nil || strings.ContainsAny(name, " \n") || len(name) > MaxOpName {
		panic("strategy: RegisterOp with an empty or unusable name, or no constructor")
	}
	if _, dup := ops[name]; dup {
		panic("strategy: RegisterOp called twice for " + name)
	}
	ops[name] = newOp
}

// MaxOpName bounds an op's name, which travels with every command.
const MaxOpName = 32

// NewOp returns a new instance of the op registered as name.
func NewOp(name string) (Op, error) {
	mu.RLock()
	f, ok := ops[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("strategy: unknown op %q (have %s)", name, strings.Join(OpNames(), ", "))
	}
	return f(), nil
}

// OpNames returns the registered ops' names, sorted.
func OpNames() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(ops))
	for k := range ops {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxParams is how many parameters an action carries for its op.
const MaxParams = 8

// G formats a number as transcripts show one.
func G(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// Gs formats numbers as transcripts show a list: "[0.5 0.25]".
func Gs(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = G(x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// Done is a Work already complete: a collective over one rank.
var Done Work = done{}

type done struct{}

func (done) Wait() error { return nil }
