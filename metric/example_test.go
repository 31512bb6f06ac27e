package metric_test

import (
	"os"

	"github.com/hetsgd/hetsgd/metric"
)

// Predictions are written a line each, as TSV or as JSON Lines.
func ExamplePredictionWriter() {
	for _, f := range []metric.PredictionFormat{metric.TSV, metric.JSONL} {
		pw, err := metric.NewPredictionWriter(os.Stdout, f)
		if err != nil {
			panic(err)
		}
		pw.Write(metric.Prediction{Point: 0, Labels: []int32{14, 75}, Scores: []float32{1.2588813, 0.85607624}})
	}
	// Output:
	// 0	14:1.2588813	75:0.85607624
	// {"point":0,"labels":[14,75],"scores":[1.2588813,0.85607624]}
}
