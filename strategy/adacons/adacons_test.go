package adacons_test

import (
	"testing"

	_ "github.com/hetsgd/hetsgd/strategy/adacons"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/adacons.txt") }
