// Package all registers every strategy of hetsgd; import it for its side
// effect:
//
//	import _ "github.com/hetsgd/hetsgd/strategy/all"
package all

import (
	_ "github.com/hetsgd/hetsgd/strategy/adacons"
	_ "github.com/hetsgd/hetsgd/strategy/adaptive"
	_ "github.com/hetsgd/hetsgd/strategy/asynclocal"
	_ "github.com/hetsgd/hetsgd/strategy/crossbow"
	_ "github.com/hetsgd/hetsgd/strategy/diloco"
	_ "github.com/hetsgd/hetsgd/strategy/elastic"
	_ "github.com/hetsgd/hetsgd/strategy/ps"
	_ "github.com/hetsgd/hetsgd/strategy/streaming"
	_ "github.com/hetsgd/hetsgd/strategy/syncsgd"
)
