package dashboard

import (
	"context"

	"github.com/hetsgd/hetsgd/internal/httpserve"
)

// DefaultAddr is the address to serve at when the user names none:
// loopback, so that a run is not shown to the network unless asked.
const DefaultAddr = "127.0.0.1:8080"

// IsLoopback reports whether addr (host:port) listens on loopback only:
// "localhost" or a loopback IP. An empty host (":8080") listens on every
// interface and is not loopback; a caller should warn that the page is then
// reachable from the network.
func IsLoopback(addr string) bool { return httpserve.IsLoopback(addr) }

// Serve serves s at addr (host:port; port 0 picks a free port) until ctx
// is done, then shuts down promptly, ending the event streams, and returns
// nil. Once it listens it calls ready, if not nil, with the page's URL
// (with the actual port). It returns an error if it cannot listen.
//
// On a loopback address, requests must name the host by an IP address or
// "localhost": a web page elsewhere cannot then read the runs by pointing
// one of its own names at 127.0.0.1 (DNS rebinding).
func Serve(ctx context.Context, addr string, s *Server, ready func(url string)) error {
	return httpserve.Serve(ctx, "dashboard", addr, s.Handler(), ready)
}
