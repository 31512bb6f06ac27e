package data

import "math"

// HandMadeStandIn returns a small stand-in built by hand, fitted to no
// set: 200 labels, 500 features, 3,000 training and 500 test points, 1 to
// 6 labels and 10 to 50 features a point, Zipf-like label and feature
// curves, no anchors. Examples and tests start from it.
func HandMadeStandIn() *StandIn {
	s := &StandIn{
		Name: "hand-made", Train: 3000, Test: 500, Features: 500, Labels: 200,
		Topics: 14, Concentration: 0.6, Signal: 0.4, TopicShare: topicShare, PrototypeSize: 30,
	}
	s.LabelsPerPoint = make([]float64, quantileKnots)
	s.FeaturesPerPoint = make([]float64, quantileKnots)
	for i := range quantileKnots {
		q := float64(i) / (quantileKnots - 1)
		s.LabelsPerPoint[i] = math.Round(1 + 5*q)
		s.FeaturesPerPoint[i] = math.Round(10 + 40*q)
	}
	for _, c := range []*Curve{&s.LabelCurve, &s.FeatureCurve} {
		for k := range 20 {
			q := (float64(k) + 0.5) / 20
			c.At = append(c.At, q)
			c.Value = append(c.Value, 0.2*math.Pow(q*20, -0.8))
		}
	}
	return s
}
