// Package cost is the virtual clock's model of what a device's work costs:
// a batch's gradient and an optimizer's update as a linear function of
// what the kernels do (Model), the default shipped for this machine kind
// (Default, default_cost.json), and its calibration on the machine at hand
// (Calibrate: timed steps over a grid of shapes, fitted by non-negative
// least squares). The engine's virtual clock charges a run by it.
package cost
