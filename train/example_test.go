package train_test

import (
	"flag"
	"fmt"
	"io"

	"github.com/hetsgd/hetsgd/comm"
	"github.com/hetsgd/hetsgd/train"
)

// A program configures a run with the tool's settings: the flags come from
// the declarations, and EngineConfig turns them into the engine's Config,
// the strategy's defaults filled in.
func ExampleSettings_EngineConfig() {
	var s train.Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	s.Register(fs)
	if err := fs.Parse([]string{"--strategy", "elastic", "--devices", "4", "--lr", "0.05"}); err != nil {
		panic(err)
	}
	cfg, err := s.EngineConfig(fs, comm.Self(), io.Discard)
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Strategy, cfg.Devices, cfg.LR, cfg.Clock)
	// Output: elastic 4 0.05 real
}

// Each setting is declared once; a resumed run may change some of them.
func ExampleDeclOf() {
	for _, name := range []string{"lr", "epochs"} {
		d, _ := train.DeclOf(name)
		fmt.Printf("--%s sets %s; a resume may change it: %v\n", d.Name, d.Field, d.MayChange)
	}
	// Output:
	// --lr sets engine.Config.LR; a resume may change it: false
	// --epochs sets engine.Config.Epochs; a resume may change it: true
}
