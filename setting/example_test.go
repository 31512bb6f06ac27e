package setting_test

import (
	"fmt"

	"github.com/hetsgd/hetsgd/setting"
)

// A library names its configuration's fields; a command-line tool names
// its flags.
func Example() {
	err := fmt.Errorf("train: %w", setting.Errorf("engine",
		"engine: {Config.Devices} %d: need a multiple of the %d ranks", 3, 2))
	fmt.Println(err)
	fmt.Println(setting.Rename(err, func(field string) string {
		if field == "engine.Config.Devices" {
			return "--devices"
		}
		return "" // keep the field's name
	}))
	// Output:
	// train: engine: Config.Devices 3: need a multiple of the 2 ranks
	// train: engine: --devices 3: need a multiple of the 2 ranks
}
