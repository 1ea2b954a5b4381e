package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/sensorreadings/readings/server"
)

// serveHTTP serves srv on ln: HTTPS when c names a certificate and its
// key, plain HTTP otherwise (behind a proxy that terminates TLS, as
// docs/deployment.md says). The files are read once, here, so that a
// missing or mismatched key stops the start: a certificate renewed on disk
// is served after a restart, which replicas take one at a time.
func serveHTTP(c *config, srv *http.Server, ln net.Listener) (serve func() error, err error) {
	if c.tlsCert == "" {
		// In the clear the service speaks HTTP/1.1 alone, whose answers
		// built whole go out in one system call over server.Listener.
		ln = server.Listener(ln)
		srv.ConnContext = server.ConnContext
		return func() error { return srv.Serve(ln) }, nil
	}
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	// ServeTLS adds HTTP/2 to the configuration, as ListenAndServeTLS does.
	return func() error { return srv.ServeTLS(ln, "", "") }, nil
}

// listenURL is the URL the service answers on, for the start-up log.
func listenURL(c *config, ln net.Listener) string {
	if c.tlsCert != "" {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}
