// Package stagetest holds a stage.Reporter that records what it is told,
// for the tests of packages that report stages.
package stagetest

// Recorder records what a stage.Reporter is told: each stage as
// "name (unit)" with its total, and the work done reported in it.
type Recorder struct {
	Names []string
	Total []float64
	Done  [][]float64
}

// Stage records a stage.
func (r *Recorder) Stage(name string, total float64, unit string) {
	r.Names = append(r.Names, name+" ("+unit+")")
	r.Total = append(r.Total, total)
	r.Done = append(r.Done, nil)
}

// Update records the work done in the last stage; it panics before any.
func (r *Recorder) Update(done float64, _ string) {
	if len(r.Done) == 0 {
		panic("an update before any stage")
	}
	r.Done[len(r.Done)-1] = append(r.Done[len(r.Done)-1], done)
}
