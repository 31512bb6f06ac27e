package runlog

import (
	"encoding/json"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/strategy"
)

// Schema is the version of the run log's schema, which the config record
// carries. Later versions add fields and record kinds; the names below never
// change. Logs written before the schema was numbered have none (0).
const Schema = 1

// Config is the first record of a run log ("config"): every setting, the
// seed, the data and the machine. Under the virtual clock it holds nothing
// that depends on the wall clock (Time, LoadSeconds), so that a log repeats
// byte for byte.
//
// A study's runs (hetsgd bench) write the same record, with Command the
// study and Name the run; they have no Settings, since no flags made them.
type Config struct {
	Event   string `json:"event"` // "config"
	Schema  int    `json:"schema"`
	Time    string `json:"time,omitempty"`
	Version string `json:"version"`
	Command string `json:"command"`
	Name    string `json:"name,omitempty"`
	// Settings are the run's settings as hetsgd train --print-config prints
	// them and --config reads them back: what decides the run, not where
	// its outputs go.
	Settings    Settings `json:"settings,omitempty"`
	Data        string   `json:"data"`
	Train       string   `json:"train,omitempty"`
	Test        string   `json:"test,omitempty"`
	TrainPoints int      `json:"train_points"`
	TestPoints  int      `json:"test_points"`
	Features    int      `json:"features"`
	Labels      int      `json:"labels"`
	// DataDigest is a SHA-256 digest of the training and test sets'
	// content (hex; data.Dataset.Fingerprint of each), not of their files
	// or paths: a resumed run checks that its data did not change.
	DataDigest  string  `json:"data_digest,omitempty"`
	Hidden      []int   `json:"hidden"`
	Dropout     float64 `json:"dropout"`
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	Optimizer   string  `json:"optimizer"`
	Momentum    float64 `json:"momentum"`
	WeightDecay float64 `json:"weight_decay"`
	Epochs      float64 `json:"epochs"`
	TimeBudget  float64 `json:"time_budget"`
	EvalEvery   float64 `json:"eval_every"`
	EvalPoints  int     `json:"eval_points"`
	// Sampled holds the sampled output layer's settings (workload.Sampling)
	// of a run that trains one; absent, the output layer is dense.
	Sampled json.RawMessage `json:"sampled,omitempty"`
	// UpdateNote says where a sampled layer's lazy rule (Sampled's update
	// "lazy": only the rows a batch touches) holds in this run and where
	// not; absent when the output layer is dense or updates every weight.
	UpdateNote  string             `json:"update_note,omitempty"`
	Seed        uint64             `json:"seed"`
	Strategy    string             `json:"strategy"`
	Options     map[string]float64 `json:"options"` // every option of the strategy, as the run used it
	Devices     int                `json:"devices"`
	Ranks       int                `json:"ranks,omitempty"`
	PerRank     int                `json:"devices_per_rank,omitempty"`
	Speeds      []float64          `json:"speeds"`
	Faults      json.RawMessage    `json:"faults,omitempty"`
	Clock       string             `json:"clock"`
	Noise       float64            `json:"noise,omitempty"`
	Cost        json.RawMessage    `json:"cost,omitempty"`
	Network     *comm.Model        `json:"network,omitempty"`
	Prep        float64            `json:"prep,omitempty"`
	NoOverlap   bool               `json:"no_overlap,omitempty"`
	TimingOnly  bool               `json:"timing_only,omitempty"`
	Workload    string             `json:"workload"`
	LineSearch  bool               `json:"line_search,omitempty"`
	StepRule    string             `json:"step_rule,omitempty"`
	Threads     int                `json:"threads"`
	Kernel      string             `json:"kernel"`
	BLAS        string             `json:"blas,omitempty"`
	CPUs        int                `json:"cpus"`
	GoVersion   string             `json:"go_version"`
	LoadSeconds float64            `json:"load_seconds,omitempty"`
	Note        string             `json:"train_seconds_note"`
}

// TrainSecondsNote is the config record's account of train_seconds.
const TrainSecondsNote = "train_seconds counts training steps only (batch preparation, forward, backward, update, merges) in the engine's clock; loading and evaluation are excluded"

// Eval is the "eval" record: the metrics of one evaluation.
type Eval struct {
	Event         string  `json:"event"` // "eval"
	Epoch         float64 `json:"epoch"`
	Samples       int64   `json:"samples"`
	TrainSeconds  float64 `json:"train_seconds"`
	metric.Fields         // p1 … ndcg5, loss
	TrainLoss     float64 `json:"train_loss"`
	TestPoints    int     `json:"test_points"`
}

// NewEval fills an eval record from scores.
func NewEval(epoch float64, samples int64, trainSeconds float64, s metric.Scores, trainLoss float64) Eval {
	return Eval{Event: "eval", Epoch: epoch, Samples: samples, TrainSeconds: trainSeconds,
		Fields: s.Fields(), TrainLoss: trainLoss, TestPoints: s.Points}
}

// Merge is the "merge" record: a strategy's merge of the replicas, with the
// per-device batch sizes, learning rates and updates of the mega-batch that
// ends (the Adaptive SGD paper's Fig. 12) and the merge weights.
type Merge struct {
	Event      string  `json:"event"`       // "merge"
	Time       float64 `json:"time"`        // engine seconds
	CenterNorm float64 `json:"center_norm"` // ‖w̄‖₂ after the merge
	*strategy.MergeRecord
}

// Note is the "note" record: something a strategy reports.
type Note struct {
	Event    string  `json:"event"` // "note"
	Time     float64 `json:"time"`
	Strategy string  `json:"strategy"`
	Text     string  `json:"text"`
}

// Async is the "async" record of parameter-server runs, written at every
// evaluation: commits so far, the staleness of the commits since the last
// record, and for GEM the median of the scaling factors π (the GEM paper's
// Fig. 3), estimated per commit on a fixed sample of parameters.
type Async struct {
	Event         string   `json:"event"` // "async"
	Time          float64  `json:"time"`
	Commits       int64    `json:"commits"`
	MeanStaleness float64  `json:"mean_staleness"`
	MaxStaleness  int      `json:"max_staleness"`
	MedianPi      *float64 `json:"median_pi,omitempty"` // nil without GEM commits
}

// Fault is the "fault" record: an injected fault that struck, and for
// crashes and stalls the moment the device left the run.
type Fault struct {
	Event  string  `json:"event"` // "fault"
	Time   float64 `json:"time"`
	Device int     `json:"device"` // -1 for a rank's fault
	// Rank is the rank a fault of a whole process struck (--fault rank=R),
	// absent for a device's.
	Rank   *int    `json:"rank,omitempty"`
	Kind   string  `json:"kind"` // crash, stall or slow
	Factor float64 `json:"factor,omitempty"`
	// Left says the device left the run at Time (for a stall, its timeout
	// after it stopped); Live is how many devices remain.
	Left bool `json:"left"`
	Live int  `json:"live"`
}

// Resume is the "resume" record: where a resumed run took up the run it
// continues, and the settings given anew.
type Resume struct {
	Event        string            `json:"event"` // "resume"
	Checkpoint   string            `json:"checkpoint"`
	Samples      int64             `json:"samples"`
	TrainSeconds float64           `json:"train_seconds"`
	Changed      map[string]string `json:"changed"`
	// Run and From, for a resumed run that is a new one branching off
	// (from a copy of its checkpoint folder, or into another folder): its
	// id, and the run and checkpoint it began at.
	Run  string `json:"run,omitempty"`
	From string `json:"from,omitempty"`
}

// Restart is a restarted job's account of the failure it recovers from
// (hetsgd launch), written at its first step, after its resume record.
type Restart struct {
	Event   string `json:"event"`   // "restart"
	Attempt int    `json:"attempt"` // 1 for the first restart
	Failure string `json:"failure"` // how the job that failed ended
	// LostSamples and LostSeconds are the work done after the checkpoint
	// the job resumes, lost with the failure (samples, training seconds).
	LostSamples int64   `json:"lost_samples"`
	LostSeconds float64 `json:"lost_seconds"`
	// RecoverySeconds is the wall time from the failure to the restarted
	// job's first step.
	RecoverySeconds float64 `json:"recovery_seconds"`
	Ranks           int     `json:"ranks,omitempty"` // the ranks of the restarted job (0: one process)
	// FailedAt and FirstStep are the wall-clock times (RFC 3339, in
	// nanoseconds) the launcher saw the failure and the restarted job's
	// first step ended.
	FailedAt  string `json:"failed_at"`
	FirstStep string `json:"first_step"`
}

// Warning is something wrong with a run that does not stop it: Kind
// "diverging", a training loss grown by orders of magnitude.
type Warning struct {
	Event   string  `json:"event"` // "warning"
	Time    float64 `json:"time"`  // engine seconds
	Samples int64   `json:"samples"`
	Kind    string  `json:"kind"`
	Text    string  `json:"text"`
}

// Done is the last record of a run log.
type Done struct {
	Event              string  `json:"event"` // "done"
	BestP1             float64 `json:"best_p1"`
	BestP1TrainSeconds float64 `json:"best_p1_train_seconds"`
	BestP1Epoch        float64 `json:"best_p1_epoch"`
	TrainSeconds       float64 `json:"train_seconds"`
	WallSeconds        float64 `json:"wall_seconds,omitempty"`
	Samples            int64   `json:"samples"`
	Merges             int     `json:"merges"`
	Interrupted        bool    `json:"interrupted"`
	Diverged           bool    `json:"diverged,omitempty"`
	// Diverging: the training loss grew by orders of magnitude during the
	// run (see the warning record), though it stayed finite.
	Diverging bool `json:"diverging,omitempty"`
	// Stalled: the training loss did not fall over the run's first
	// evaluations (see the warning record).
	Stalled bool `json:"stalled,omitempty"`
	// StoppedEarly: the run stopped after --patience evaluations without a
	// better one.
	StoppedEarly bool `json:"stopped_early,omitempty"`
	// Error is why the run ended early, when an error ended it (a
	// checkpoint that could not be written, a log write that failed).
	Error       string `json:"error,omitempty"`
	MaxRSSBytes int64  `json:"max_rss_bytes,omitempty"` // real clock: the process's peak resident memory
	// Layered is Layered SGD's account of its all-reduces across ranks.
	Layered *Layered `json:"layered,omitempty"`
}

// Layered is the done record's account of Layered SGD's all-reduces across
// ranks, in milliseconds per step on rank 0.
type Layered struct {
	Steps       int64   `json:"steps"`
	ReduceMS    float64 `json:"reduce_ms"`
	OverlapMS   float64 `json:"overlap_ms"`
	WaitMS      float64 `json:"wait_ms"`
	BroadcastMS float64 `json:"broadcast_ms"`
}

// Best returns the evaluation with the highest P@1 (the earliest on ties) and
// false when there is none.
func Best(evals []Eval) (Eval, bool) {
	var best Eval
	found := false
	for _, e := range evals {
		if !found || e.P1 > best.P1 {
			best, found = e, true
		}
	}
	return best, found
}

// TimeTo returns the training seconds of the first evaluation whose P@1
// reaches target, and false when none does.
func TimeTo(evals []Eval, target float64) (float64, bool) {
	for _, e := range evals {
		if e.P1 >= target {
			return e.TrainSeconds, true
		}
	}
	return 0, false
}
