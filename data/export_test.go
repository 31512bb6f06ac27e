package data

// HandMadeStandIn is testStandIn, for the package's external tests.
func HandMadeStandIn() *StandIn { return testStandIn() }
