package workload

import (
	"math"
	"slices"
	"testing"

	"github.com/hetsgd/hetsgd/data"
	"github.com/hetsgd/hetsgd/kernel"
	"github.com/hetsgd/hetsgd/sparse"
)

// A label on every point is always shared; one on none only when drawn
// at random; one on half the points unless the other batch−1 points all
// miss it and the draw does too.
func TestInclusionKnownAnswers(t *testing.T) {
	y := &sparse.CSR{Rows: 4, Cols: 10, Indptr: []int64{0, 2, 3, 5, 6}, Indices: []int32{0, 2, 0, 0, 2, 0}}
	pi := inclusion(y, 3, 2, 10)
	for k, want := range map[int]float64{0: 1, 1: 0.2, 2: 1 - 0.25*0.8} {
		if math.Abs(float64(pi[k])-want) > 1e-6 {
			t.Errorf("label %d: π %v, want %v", k, pi[k], want)
		}
	}
}

// A background table build under way when the run ends is joined by
// Close: its goroutine is over and its tables are in use.
func TestCloseJoinsTheBackgroundBuild(t *testing.T) {
	x, p, g, stream := rehashingWorker(t, false)
	for range 100 {
		x.Load(stream, 32)
		x.Gradient(p, g)
		if x.done != nil {
			break
		}
	}
	if x.done == nil {
		t.Fatal("no background build started")
	}
	building := x.spare
	x.Close()
	if x.done != nil || x.ix != building {
		t.Fatalf("after Close: a build still under way (%v) or its tables not in use", x.done != nil)
	}
	x.Close() // twice: nothing left to wait for
}

// rehashingWorker is a worker of the bundled Bibtex whose small tables (K 2,
// L 4) it rebuilds in the background every 32 samples, with its
// parameters, a gradient buffer and a stream of batches; shared: for the
// virtual clock, which builds in line.
func rehashingWorker(t *testing.T, shared bool) (*sampledWorker, []float32, []float32, *data.Sampler) {
	t.Helper()
	s := DefaultSampling()
	s.K, s.L, s.Active, s.Rehash, s.Background = 2, 4, 0.1, 32, true
	w, x, p := bibtexWorker(t, s, shared)
	return x, p, make([]float32, len(p)), data.NewSampler(w.Size(), 1)
}

// slideWorker is a worker of the bundled Bibtex (159 labels, fewer than
// SLIDE's floor of 1,000 rows) with the sampled layer s, built in line, its
// parameters initialised and a batch of 32 loaded.
func slideWorker(t *testing.T, s Sampling) (*XML, *sampledWorker, []float32) {
	t.Helper()
	s.Background = false
	return bibtexWorker(t, s, false)
}

// bibtexWorker is a worker of the bundled Bibtex with the sampled layer s
// (built in the background if s says so), its parameters initialised and a
// batch of 32 loaded; shared: for the virtual clock.
func bibtexWorker(t *testing.T, s Sampling, shared bool) (*XML, *sampledWorker, []float32) {
	t.Helper()
	train, test, err := data.Bundled("bibtex")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewXML(train, test, []int{16}, 0, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetSampling(s); err != nil {
		t.Fatal(err)
	}
	wk, err := w.NewWorker(32, 1, shared)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, w.NumParams())
	w.Init(p, 1)
	wk.Load(data.NewSampler(w.Size(), 1), 32)
	return w, wk.(*sampledWorker), p
}

// In SLIDE's mode a label space smaller than SLIDE's floor is trained
// whole, as SLIDE's code pads every point's set to 1,000 rows: the loss
// and the gradient are the dense layer's, whatever the 0.5% budget says.
func TestSLIDEModeTrainsEveryLabelUnderTheFloor(t *testing.T) {
	w, x, p := slideWorker(t, DefaultSampling().SLIDE())
	g, gd := make([]float32, len(p)), make([]float32, len(p))
	loss := x.Gradient(p, g)
	labels := w.Train.Labels()
	for i := range x.batch.Len() {
		if n, _ := x.batch.Y.Row(i); len(n) > 0 && len(x.smp.Own(i)) != labels {
			t.Fatalf("point %d trains %d rows of %d", i, len(x.smp.Own(i)), labels)
		}
	}
	dense := w.m.NewWorkspace(32).Gradient(p, gd, &x.batch.X, &x.batch.Y)
	if math.Abs(loss-dense) > 1e-6*(1+math.Abs(dense)) {
		t.Fatalf("loss %v, dense %v", loss, dense)
	}
	for i := range g {
		if d := math.Abs(float64(g[i] - gd[i])); d > 1e-5*(1+math.Abs(float64(gd[i]))) {
			t.Fatalf("gradient[%d] = %v, dense %v", i, g[i], gd[i])
		}
	}
}

// Outside SLIDE's mode the floor does not apply: with its own points'
// padding but the lazy update, a point's set is padded to Active's budget
// only (its labels aside).
func TestFloorOnlyInSLIDEMode(t *testing.T) {
	s := DefaultSampling().SLIDE()
	s.Update = "lazy"
	w, x, p := slideWorker(t, s)
	x.Gradient(p, make([]float32, len(p)))
	budget := s.active(w.Train.Labels())
	for i := range x.batch.Len() {
		labels, _ := x.batch.Y.Row(i)
		if own := len(x.smp.Own(i)); own > max(budget, len(labels)) {
			t.Fatalf("point %d trains %d rows: want at most %d (its %d labels, or the budget)", i, own, max(budget, len(labels)), len(labels))
		}
	}
}

// SLIDE's hashing is its Delicious setting on 983 labels, its Amazon-670K
// setting on 670,091, and Amazon-670K's, unnamed, on any other count.
func TestSLIDEFor(t *testing.T) {
	for _, c := range []struct {
		labels int
		hash   string
		k, l   int
		name   string
	}{{983, "srp", 9, 50, "Delicious"}, {670_091, "dwta", 6, 50, "Amazon-670K"}, {159, "dwta", 6, 50, ""}} {
		s, name := DefaultSampling().SLIDE().SLIDEFor(c.labels)
		if s.Hash != c.hash || s.K != c.k || s.L != c.l || s.Capacity != 128 || name != c.name {
			t.Errorf("%d labels: %s K %d L %d capacity %d (%q), want %s K %d L %d capacity 128 (%q)", c.labels, s.Hash, s.K, s.L, s.Capacity, name, c.hash, c.k, c.l, c.name)
		}
		if !s.isSLIDE() || s.Check() != nil {
			t.Errorf("%d labels: left SLIDE's mode (%v) or invalid (%v)", c.labels, s.isSLIDE(), s.Check())
		}
	}
}

// A worker for the virtual clock (shared) builds its tables in line, and a
// build its settings put in the background is accounted as overlapped.
func TestVirtualWorkerBuildsInLine(t *testing.T) {
	x, p, g, stream := rehashingWorker(t, true)
	var overlapped int64
	for range 20 {
		x.Load(stream, 32)
		x.Gradient(p, g)
		if x.done != nil {
			t.Fatal("a worker of the virtual clock started a background build")
		}
		overlapped += x.LastWork().Overlapped
	}
	if x.spare != nil || overlapped == 0 {
		t.Fatalf("spare tables %v, overlapped hash values %d: want none and some", x.spare != nil, overlapped)
	}
}

// The run's estimate counts every device's sampled layer — no two workers
// share one, even under the virtual clock, which shares a dense layer's
// workspace — and the background build's second tables and weight copy
// only where builds run in the background.
func TestWorkersBytes(t *testing.T) {
	s := DefaultSampling()
	s.K, s.L, s.Active, s.Background = 2, 4, 0.1, true
	w, _, _ := bibtexWorker(t, s, true)
	one, four := w.WorkersBytes(32, 1, true), w.WorkersBytes(32, 4, true)
	first, l := w.m.Layers()[0], w.m.Layers()[len(w.m.Layers())-1]
	rows := 8 * int64(first.In+l.Out) // the lazy rows' record, once a rank
	if w.sampling.Update != "lazy" {
		t.Fatalf("the default update is %q, want lazy", w.sampling.Update)
	}
	if one <= rows || four != 4*(one-rows)+rows {
		t.Fatalf("sampled workers, shared: one %d bytes, four %d (the lazy rows' record %d)", one, four, rows)
	}
	lazy := w.sampling
	eager := *lazy
	eager.Update = "dense"
	w.sampling = &eager
	if got := w.WorkersBytes(32, 1, true); got != one-rows {
		t.Fatalf("dense updates: %d bytes, lazy %d: want the lazy rows' record (%d) less", got, one, rows)
	}
	w.sampling = lazy
	if real := w.WorkersBytes(32, 1, false); real <= one+4*int64(l.In*l.Out) {
		t.Fatalf("a worker building in the background: %d bytes, in line %d", real, one)
	}
	dense, _, _ := bibtexWorker(t, s, true)
	dense.sampling = nil
	if a, b := dense.WorkersBytes(32, 1, true), dense.WorkersBytes(32, 4, true); a <= 0 || a != b || dense.WorkersBytes(32, 4, false) != 4*a {
		t.Fatalf("dense workers: one %d bytes, four sharing %d", a, b)
	}
}

// A background build comes into use when the next is due, whatever the
// time it took: two runs of a worker rebuilding its tables in the
// background, on one kernel worker and on three, give the same losses,
// bit for bit, and so does a run resumed from a checkpoint taken while a
// build was under way.
func TestBackgroundBuildsDeterministic(t *testing.T) {
	defer kernel.SetThreads(0)
	const batches, cut = 40, 13
	run := func(threads int, resume bool) []float64 {
		kernel.SetThreads(threads)
		x, p, g, stream := rehashingWorker(t, false)
		defer x.Close()
		var losses []float64
		for b := range batches {
			if resume && b == cut {
				if x.done == nil {
					t.Fatalf("no build under way at batch %d: the checkpoint tests nothing", cut)
				}
				st, err := x.RandomState()
				if err != nil {
					t.Fatal(err)
				}
				again, q, _, _ := rehashingWorker(t, false)
				defer again.Close()
				if err := again.SetRandomState(st); err != nil {
					t.Fatal(err)
				}
				copy(q, p)
				x.Close()
				x, p = again, q
			}
			pending, early := x.spare, x.done != nil && float64(x.trained) < x.swapAt
			x.Load(stream, 32)
			losses = append(losses, x.Gradient(p, g))
			kernel.Axpy(-0.5, g, p)
			if early && x.ix == pending {
				t.Fatalf("batch %d: a build came into use at %d samples, before its turn at %v", b, x.trained, x.swapAt)
			}
		}
		return losses
	}
	want := run(1, false)
	for _, c := range []struct {
		threads int
		resume  bool
	}{{3, false}, {1, true}, {2, true}} {
		if got := run(c.threads, c.resume); !slices.Equal(got, want) {
			t.Fatalf("%d kernel workers, resumed %v: losses %v,\nwant %v", c.threads, c.resume, got, want)
		}
	}
}
