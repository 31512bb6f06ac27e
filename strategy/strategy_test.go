package strategy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
)

func TestRegistry(t *testing.T) {
	var names []string
	for _, i := range strategy.List() {
		names = append(names, i.Name)
		if i.Summary == "" {
			t.Errorf("%s has no summary", i.Name)
		}
	}
	for _, want := range []string{"adaptive", "adaptive-code", "crossbow", "elastic", "sync"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not registered (have %v)", want, names)
		}
	}
	cfg := strategy.Config{Devices: 2, Batch: 8, LR: 0.1, Options: map[string]float64{"beta": 1}}
	if _, _, err := strategy.New("sync", cfg); err == nil || !strings.Contains(err.Error(), "option beta does not apply to sync") {
		t.Errorf("option for another strategy: %v", err)
	}
	if _, _, err := strategy.New("nope", cfg); err == nil || !strings.Contains(err.Error(), "unknown strategy") {
		t.Errorf("unknown strategy: %v", err)
	}
	cfg.Options = nil
	cfg.Devices = 0
	if _, _, err := strategy.New("sync", cfg); err == nil || !strings.Contains(err.Error(), "devices 0") {
		t.Errorf("zero devices: %v", err)
	}
}

// The elastic default splits the paper's mega-batch of 100 batches over the
// devices: ⌈100/3⌉ = 34 local steps before the first merge.
func TestElasticDefaultK(t *testing.T) {
	s, _, err := strategy.New("elastic", strategy.Config{Devices: 3, Batch: 4, LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	acts := s.Step(strategy.Event{Kind: strategy.Start}, nil)
	steps := 1
	for {
		acts = s.Step(strategy.Event{Kind: strategy.BatchDone, Device: 0}, acts[:0])
		if len(acts) == 0 {
			break
		}
		steps++
	}
	if steps != 34 {
		t.Fatalf("device 0 took %d steps before waiting, want 34", steps)
	}
}
