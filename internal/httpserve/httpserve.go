// Package httpserve serves an HTTP handler of the tool's (the dashboard,
// the model server) on an address until a context ends: loopback by
// default, guarded against DNS rebinding there, and shut down within a
// second of Ctrl-C.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// shutdownWait is how long Serve lets handlers finish at shutdown before
// closing their connections: every command stops within a second of
// Ctrl-C. Handlers that stream end as soon as the context is cancelled;
// only a write stuck on a client that stopped reading needs the connection
// closed under it.
const shutdownWait = 500 * time.Millisecond

// IsLoopback reports whether addr (host:port) listens on loopback only:
// "localhost" or a loopback IP. An empty host (":8080") listens on every
// interface and is not loopback; a caller should warn that the server is
// then reachable from the network.
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

// Serve serves h at addr (host:port; port 0 picks a free port) until ctx
// is done, then shuts down promptly and returns nil; requests' contexts
// end with ctx. Once it listens it calls ready, if not nil, with the
// server's URL (with the actual port). It returns an error, prefixed with
// who ("dashboard"), if it cannot listen.
//
// On a loopback address, requests must name the host by an IP address or
// "localhost": a web page elsewhere cannot then reach the server by
// pointing one of its own names at 127.0.0.1 (DNS rebinding).
func Serve(ctx context.Context, who, addr string, h http.Handler, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w (name another address, or port 0 for any free one)", who, err)
	}
	if IsLoopback(addr) {
		h = loopbackNames(who, h)
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
		return fmt.Errorf("%s: %w", who, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // a handler still writing to a client that does not read
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", who, err)
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
func loopbackNames(who string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
		if host != "localhost" && !strings.HasSuffix(host, ".localhost") && net.ParseIP(host) == nil {
			http.Error(w, who+": this server answers to localhost and IP addresses only; open it as http://127.0.0.1:PORT/", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
