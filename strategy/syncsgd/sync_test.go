package syncsgd_test

import (
	"testing"

	"github.com/hetsgd/hetsgd/strategy/strategytest"
	_ "github.com/hetsgd/hetsgd/strategy/syncsgd"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/sync.txt") }
