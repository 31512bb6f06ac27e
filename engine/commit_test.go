package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/hetsgd/hetsgd/internal/testdata"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/comm/commtest"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/strategy"
)

// testPush is a commit op for the engine's tests: the update is the
// replica's displacement from the centre it was sent (δ = θ_sent − w, so
// it needs the centre), the centre's rank subtracts it halved, and the
// worker then goes on from the centre the commit made (a Restarter).
type testPush struct{}

const testPushOp = "engine-test-push"

func init() { strategy.RegisterOp(testPushOp, func() strategy.Op { return testPush{} }) }

func (testPush) Format(a *strategy.Action) string    { return fmt.Sprintf("test-push dev=%d", a.Device) }
func (testPush) Cost(*strategy.Action) strategy.Cost { return strategy.Cost{Transfers: 2} }
func (testPush) Check(*strategy.Action, int) error   { return nil }
func (testPush) NeedsCenter(*strategy.Action) bool   { return true }
func (testPush) Apply(h strategy.Host, _ *strategy.Action, u []float32) {
	kernel.Axpy(-0.5, u, h.Center())
}

func (testPush) Delta(_ strategy.Host, r strategy.Replica, _ *strategy.Action, theta []float32) float64 {
	g := r.Grad()
	copy(g, theta)
	kernel.Axpy(-1, r.Params(), g)
	return 7
}

func (testPush) Restart(_ strategy.Host, r strategy.Replica, _ *strategy.Action, theta []float32) {
	copy(r.Params(), theta)
}

// A commit of a device on another rank than the centre's: rank 0 sends the
// centre (the op needs it), the worker's rank turns its replica into the
// update, rank 0 applies it with the op and sends the centre back, which the
// worker goes on from — and the same commit in one process gives the same
// centre and replica.
func TestCommitAcrossRanksRestartsTheWorker(t *testing.T) {
	w := xml(t, 0)
	cfg := base("downpour", 2, Real)
	a := strategy.Action{Kind: strategy.Commit, Device: 1, Op: testPushOp}
	setup := func(x *executor) {
		for i := range x.center {
			x.center[i] = float32(i%7) * 0.1
		}
		if d := x.local(1); d != nil {
			for i := range d.p {
				d.p[i] = float32(i%5) * 0.3
			}
		}
	}

	// In one process.
	one, err := newExecutor(cfg, w, comm.Self(), 8)
	if err != nil {
		t.Fatal(err)
	}
	setup(one)
	stat, err := one.commit(one.local(1), &a)
	if err != nil || stat != 7 {
		t.Fatalf("in one process: statistic %v, %v", stat, err)
	}
	if !testdata.EqualBits(one.local(1).p, one.center) {
		t.Fatal("in one process: the worker does not go on from the centre its commit made")
	}

	// On two ranks: device 1 on rank 1.
	var center, replica []float32
	errs := commtest.OnMem(2, func(c comm.Comm) error {
		cfg := cfg
		cfg.World = c
		x, err := newExecutor(cfg, w, c, 8)
		if err != nil {
			return err
		}
		setup(x)
		cl := newCluster(c, cfg.Devices)
		if c.Rank() == 0 {
			op, err := x.committer(a.Op)
			if err != nil {
				return err
			}
			s, err := cl.commit(&a, op, x)
			if err == nil && s != 7 {
				err = fmt.Errorf("statistic %v, want 7", s)
			}
			center = x.center
			return err
		}
		st, err := c.Recv(0, tagCmd, cl.buf)
		if err != nil {
			return err
		}
		var cmd command
		if err := cmd.decode(cl.buf[:st.Bytes]); err != nil {
			return err
		}
		err = x.commitRemote(&cmd, cl)
		replica = x.local(1).p
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if !testdata.EqualBits(center, one.center) || !testdata.EqualBits(replica, one.center) {
		var d float64
		for i := range center {
			d = math.Max(d, math.Abs(float64(center[i]-one.center[i])))
		}
		t.Fatalf("across ranks the centre differs from one process's by %g, or the worker does not go on from it", d)
	}
}
