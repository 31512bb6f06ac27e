package crossbow_test

import (
	"testing"

	_ "github.com/hetsgd/hetsgd/strategy/crossbow"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/crossbow.txt") }
