package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheck asks the service on this host whether it is ready (GET
// /readyz), for a container's health check: the image has no shell and no
// curl. It reads the address and TLS settings as serve does, so that it
// asks the port serve listens on, and exits 0 only on a 200.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	c, err := parseConfig("healthcheck", args, func(key string) string {
		if key == "DATABASE_URL" && getenv(key) == "" {
			return "unused" // serve needs it; the check does not
		}
		return getenv(key)
	}, stderr)
	if err != nil {
		return err
	}
	url, err := readyURL(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	// The certificate names the host clients use, not the loopback
	// address the check dials: it asks whether the process answers, not
	// whom it is.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d: %s", url, res.StatusCode, body)
	}
	return nil
}

// readyURL is the /readyz URL of the service serve would start with c: on
// loopback when it listens on every address.
func readyURL(c *config) (string, error) {
	host, port, err := net.SplitHostPort(c.addr)
	if err != nil {
		return "", fmt.Errorf("healthcheck: address %q: %w", c.addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	scheme := "http"
	if c.tlsCert != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/readyz", nil
}
