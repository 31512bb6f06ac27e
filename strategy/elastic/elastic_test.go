package elastic_test

import (
	"testing"

	_ "github.com/hetsgd/hetsgd/strategy/elastic"
	"github.com/hetsgd/hetsgd/strategy/strategytest"
)

func TestScripts(t *testing.T) { strategytest.Run(t, "testdata/elastic.txt") }
