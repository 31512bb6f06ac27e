package all_test

import (
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

// Every registered strategy keeps the contract of package strategy.
func TestConformance(t *testing.T) {
	list := strategy.List()
	if len(list) == 0 {
		t.Fatal("no strategy registered")
	}
	for _, info := range list {
		t.Run(info.Name, func(t *testing.T) { strategytest.Conformance(t, info.Name) })
	}
}
