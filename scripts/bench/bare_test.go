package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBareClient reads answers as rows 6, 6b and 10b do, several on one connection:
// the body by its length, and an error for anything but a 200 with one.
func TestBareClient(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got, want := r.Header.Get("Authorization"), "Bearer secret"; got != want {
			t.Errorf("Authorization = %q, want %q", got, want)
		}
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Length", "11")
			w.Write([]byte(`{"items":1}`))
		case "/missing":
			http.Error(w, "no such thing", http.StatusNotFound)
		case "/chunked":
			w.Write([]byte("part"))
			w.(http.Flusher).Flush()
			w.Write([]byte("rest"))
		}
	}))
	defer ts.Close()
	s := &service{base: ts.URL, token: "secret"}
	for _, c := range []struct {
		path, body, err string
	}{
		{path: "/ok", body: `{"items":1}`},
		{path: "/missing", err: "404 Not Found: no such thing"},
		{path: "/chunked", err: "without Content-Length"},
	} {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			bare, err := s.dialBare()
			if err != nil {
				t.Fatal(err)
			}
			defer bare.Close()
			// Twice: the second answer must follow the first on the
			// same connection.
			for range 2 {
				err := bare.get(c.path)
				if c.err != "" {
					if err == nil || !strings.Contains(err.Error(), c.err) {
						t.Fatalf("get() = %v, want an error with %q", err, c.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := string(bare.body); got != c.body {
					t.Errorf("body = %q, want %q", got, c.body)
				}
			}
		})
	}
}
