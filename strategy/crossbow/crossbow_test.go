package crossbow_test

import (
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/crossbow"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/crossbow.txt") }

func TestOptionErrors(t *testing.T) {
	for _, v := range []float64{0.5, 2, -1} {
		_, _, err := strategy.New("crossbow", strategy.Config{Devices: 2, Batch: 8, LR: 0.1, Options: map[string]float64{"correct-after": v}})
		if err == nil || !strings.Contains(err.Error(), "crossbow: --correct-after") {
			t.Errorf("--correct-after %v: error %v", v, err)
		}
	}
}
