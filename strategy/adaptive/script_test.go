package adaptive_test

import (
	"testing"

	_ "github.com/hetsgd/hetsgd/strategy/adaptive"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/flow.txt", "testdata/code.txt") }
