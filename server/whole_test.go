package server

import (
	"net"
	"slices"
	"testing"
)

// recordingConn records what reaches the connection, write by write.
type recordingConn struct {
	net.Conn
	writes []string
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

// TestWholeConnHolds follows what reaches a connection of Listener after
// each step: a write is held while the connection holds, and goes out
// with the next one, or alone at release.
func TestWholeConnHolds(t *testing.T) {
	type step struct {
		do   string // "hold", "release" or the bytes to write
		want []string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"NotHolding", []step{{"a", []string{"a"}}, {"b", []string{"a", "b"}}}},
		{"HeldUntilTheNext", []step{{"hold", nil}, {"a", nil}, {"b", []string{"a", "b"}}, {"release", []string{"a", "b"}}}},
		{"HeldUntilRelease", []step{{"hold", nil}, {"a", nil}, {"release", []string{"a"}}, {"b", []string{"a", "b"}}}},
		{"OnlyTheFirstHeld", []step{{"hold", nil}, {"a", nil}, {"b", []string{"a", "b"}}, {"c", []string{"a", "b", "c"}}}},
		{"NothingToRelease", []step{{"hold", nil}, {"release", nil}, {"a", []string{"a"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingConn{}
			c := &wholeConn{Conn: rec}
			for i, s := range tt.steps {
				switch s.do {
				case "hold":
					c.hold()
				case "release":
					if err := c.release(); err != nil {
						t.Fatal(err)
					}
				default:
					if n, err := c.Write([]byte(s.do)); err != nil || n != len(s.do) {
						t.Fatalf("Write(%q) = %d, %v", s.do, n, err)
					}
				}
				if got := rec.writes; !slices.Equal(got, s.want) {
					t.Errorf("after step %d (%s): the connection got %q, want %q", i, s.do, got, s.want)
				}
			}
		})
	}
}
