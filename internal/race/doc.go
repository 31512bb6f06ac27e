// Package race says whether the race detector is built in, so that tests
// can size themselves for it: the detector slows plain loops tenfold or
// more and changes what allocates, so the heaviest tests run smaller under
// it (their full size runs in the ordinary test stage) and allocation
// counts are not checked.
package race
