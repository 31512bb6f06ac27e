package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// DefaultAddr is the address to serve at when the user names none:
// loopback, so that a run is not shown to the network unless asked.
const DefaultAddr = "127.0.0.1:8080"

// shutdownWait is how long Serve lets handlers finish at shutdown before
// closing their connections. Event streams end as soon as the context is
// cancelled; only a write stuck on a client that stopped reading needs the
// connection closed under it.
const shutdownWait = 500 * time.Millisecond

// IsLoopback reports whether addr (host:port) listens on loopback only:
// "localhost" or a loopback IP. An empty host (":8080") listens on every
// interface and is not loopback; a caller should warn that the page is then
// reachable from the network.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves s at addr (host:port; port 0 picks a free port) until ctx
// is done, then shuts down promptly, ending the event streams, and returns
// nil. Once it listens it calls ready, if not nil, with the page's URL
// (with the actual port). It returns an error if it cannot listen.
//
// On a loopback address, requests must name the host by an IP address or
// "localhost": a web page elsewhere cannot then read the runs by pointing
// one of its own names at 127.0.0.1 (DNS rebinding).
func Serve(ctx context.Context, addr string, s *Server, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: %w (name another address, or port 0 for any free one)", err)
	}
	h := s.Handler()
	if IsLoopback(addr) {
		h = loopbackNames(h)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests end with ctx: the event streams return at once.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(pageURL(ln.Addr()))
	}
	select {
	case err := <-done:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // a handler still writing to a client that does not read
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// pageURL is the URL a user on this machine opens: an unspecified address
// (every interface) is reached through localhost.
func pageURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// loopbackNames refuses requests whose Host is a name other than
// localhost.
func loopbackNames(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
		if host != "localhost" && !strings.HasSuffix(host, ".localhost") && net.ParseIP(host) == nil {
			http.Error(w, "dashboard: this server answers to localhost and IP addresses only; open it as http://127.0.0.1:PORT/", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
