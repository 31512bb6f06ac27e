// Package tune runs the two protocols by which parallel SGD strategies are
// compared, over a grid of learning rates, batch sizes and seeds:
//
//   - shared: one learning rate and batch for every strategy, the best on
//     average over the strategies, chosen among the grid's powers of ten —
//     the protocol of the Adaptive SGD paper (§5.1), which keeps the
//     comparison about the algorithms rather than their tuning;
//   - own: each strategy at the rate and batch of the grid that suit it
//     best, which is what a user of one strategy would do.
//
// Each point of the grid is a complete engine run; its best P@1 and its
// time to a common P@1 target (time-to-accuracy) are averaged over the
// seeds. Summarize turns the runs into both protocols' choices, side by side,
// and Summary.Write prints them as tables. A front end checks a grid before
// it loads any data with Grid.Validate and Grid.CheckVariants.
package tune
