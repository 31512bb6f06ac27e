package syncsgd_test

import (
	"testing"

	_ "github.com/hetsgd/hetsgd/strategy/syncsgd"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/sync.txt") }
