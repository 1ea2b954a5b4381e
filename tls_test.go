package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store/storetest"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key to
// dir, and returns their paths and a pool that trusts the certificate.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

func TestTLSConfig(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr bool
	}{
		{name: "Neither", env: map[string]string{"DATABASE_URL": "postgres://x"}},
		{name: "BothFromEnv", env: map[string]string{"DATABASE_URL": "postgres://x", "TLS_CERT": "c.pem", "TLS_KEY": "k.pem"}},
		{name: "BothFromFlags", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-tls-cert", "c.pem", "-tls-key", "k.pem"}},
		{name: "CertAlone", env: map[string]string{"DATABASE_URL": "postgres://x", "TLS_CERT": "c.pem"}, wantErr: true},
		{name: "KeyAlone", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-tls-key", "k.pem"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig("serve", tt.args, envOf(tt.env), io.Discard)
			if gotErr := err != nil; gotErr != tt.wantErr || (gotErr && !strings.Contains(err.Error(), "-tls-cert and -tls-key")) {
				t.Errorf("parseConfig(%v, %v) error = %v, want an error: %v", tt.args, tt.env, err, tt.wantErr)
			}
		})
	}
}

// The service serves HTTPS with -tls-cert and -tls-key: a client that
// trusts the certificate gets its answers over TLS, HTTP/2 included, and a
// plain HTTP request is refused.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	certFile, keyFile, roots := writeCert(t, t.TempDir())
	addr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- run(ctx, []string{"serve", "-addr", addr, "-log-level", "warn"},
			envOf(map[string]string{"DATABASE_URL": url, "TLS_CERT": certFile, "TLS_KEY": keyFile}), io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serve returned %v, want nil", err)
		}
	})

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true,
	}}
	var res *http.Response
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if res, err = client.Get("https://" + addr + "/readyz"); err == nil {
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serve returned before it answered: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer over https within 30 s: %v", err)
		}
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.TLS == nil || res.ProtoMajor != 2 {
		t.Errorf("GET https://%s/readyz = %d over %s (TLS %v), want 200 over HTTP/2 and TLS", addr, res.StatusCode, res.Proto, res.TLS != nil)
	}
	// The container's health check finds it where serve listens, over TLS.
	if err := run(t.Context(), []string{"healthcheck"}, envOf(map[string]string{"LISTEN_ADDR": addr, "TLS_CERT": certFile, "TLS_KEY": keyFile}), io.Discard, io.Discard); err != nil {
		t.Errorf("healthcheck of the HTTPS service: %v", err)
	}
	if err := run(t.Context(), []string{"healthcheck"}, envOf(map[string]string{"LISTEN_ADDR": addr}), io.Discard, io.Discard); err == nil {
		t.Error("healthcheck over plain HTTP of the HTTPS service passed")
	}
	plain, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("plain HTTP: %v", err)
	}
	plain.Body.Close()
	if plain.StatusCode != http.StatusBadRequest {
		t.Errorf("GET http://%s/readyz = %d, want 400: plain HTTP to an HTTPS port", addr, plain.StatusCode)
	}
}

// A key that is not the certificate's stops the start with an error that
// names TLS, rather than a server that fails every handshake.
func TestServeTLSBadKey(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	certFile, _, _ := writeCert(t, t.TempDir())
	_, otherKey, _ := writeCert(t, t.TempDir())
	err := run(t.Context(), []string{"serve", "-addr", freeAddr(t), "-log-level", "warn", "-tls-cert", certFile, "-tls-key", otherKey},
		envOf(map[string]string{"DATABASE_URL": url}), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "tls") {
		t.Errorf("serve with another certificate's key = %v, want a tls error", err)
	}
}

func TestReadyURL(t *testing.T) {
	for _, tt := range []struct {
		addr, cert, want string
	}{
		{addr: "127.0.0.1:8080", want: "http://127.0.0.1:8080/readyz"},
		{addr: "0.0.0.0:8080", want: "http://127.0.0.1:8080/readyz"},
		{addr: ":9090", want: "http://127.0.0.1:9090/readyz"},
		{addr: "[::]:8080", want: "http://[::1]:8080/readyz"},
		{addr: "0.0.0.0:8443", cert: "c.pem", want: "https://127.0.0.1:8443/readyz"},
	} {
		got, err := readyURL(&config{addr: tt.addr, tlsCert: tt.cert})
		if err != nil || got != tt.want {
			t.Errorf("readyURL(%q, cert %q) = %q, %v; want %q", tt.addr, tt.cert, got, err, tt.want)
		}
	}
}

// Nothing listening is unhealthy.
func TestHealthcheckNothingListens(t *testing.T) {
	err := run(t.Context(), []string{"healthcheck"}, envOf(map[string]string{"LISTEN_ADDR": freeAddr(t)}), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "healthcheck") {
		t.Errorf("healthcheck with nothing listening = %v, want an error", err)
	}
}
