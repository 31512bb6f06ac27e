package ps_test

import (
	"testing"

	_ "github.com/hetsgd/hetsgd/strategy/ps"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/ps.txt") }
