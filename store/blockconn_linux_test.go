package store

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// blockingPair is a blockingConn dialled to a local listener, and the
// listener's end of it.
func blockingPair(t *testing.T) (*blockingConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	var d net.Dialer
	c, err := blockingDial(d.DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	b, ok := c.(*blockingConn)
	if !ok {
		t.Fatalf("blockingDial gave a %T", c)
	}
	t.Cleanup(func() { b.Close(); peer.Close() })
	return b, peer
}

// blockedRead starts a read of c, which nothing will answer, and gives
// it 20 ms to block; its error comes on the channel.
func blockedRead(c *blockingConn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	return done
}

// TestBlockingConn holds blockingConn to net's conn where pgconn relies
// on it: a deadline set while a read blocks (a cancelled context) fails
// the read with a timeout and leaves the connection usable; Close wakes
// a blocked read; bytes pass both ways; the peer's close is io.EOF.
func TestBlockingConn(t *testing.T) {
	t.Run("deadline while blocked", func(t *testing.T) {
		c, peer := blockingPair(t)
		done := blockedRead(c)
		c.SetDeadline(time.Now())
		var netErr net.Error
		select {
		case err := <-done:
			if !errors.As(err, &netErr) || !netErr.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Read = %v, want a timeout", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Read still blocked a second after its deadline")
		}
		// Usable again, as net's conn is.
		c.SetDeadline(time.Time{})
		if _, err := peer.Write([]byte("after")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		if n, err := io.ReadAtLeast(c, buf, 5); err != nil || string(buf[:n]) != "after" {
			t.Fatalf("Read after the deadline = %q, %v; want %q", buf[:n], err, "after")
		}
	})
	t.Run("close wakes a read", func(t *testing.T) {
		c, _ := blockingPair(t)
		done := blockedRead(c)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Read = %v, want net.ErrClosed", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Read still blocked a second after Close")
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Write after Close = %v, want net.ErrClosed", err)
		}
	})
	t.Run("both ways, then EOF", func(t *testing.T) {
		c, peer := blockingPair(t)
		big := make([]byte, 1<<20) // more than the socket's buffers: writes block meanwhile
		for i := range big {
			big[i] = byte(i * 7)
		}
		go func() {
			peer.Write(big)
			peer.Close()
		}()
		got, err := io.ReadAll(c)
		if err != nil || string(got) != string(big) {
			t.Fatalf("ReadAll = %d bytes, %v; want the %d written", len(got), err, len(big))
		}
		c2, peer2 := blockingPair(t)
		go func() { c2.Write(big); c2.Close() }()
		if got, err := io.ReadAll(peer2); err != nil || string(got) != string(big) {
			t.Fatalf("peer's ReadAll = %d bytes, %v; want the %d written", len(got), err, len(big))
		}
	})
	t.Run("deadline passed before a write", func(t *testing.T) {
		c, _ := blockingPair(t)
		c.SetWriteDeadline(time.Now().Add(-time.Second))
		if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Write = %v, want os.ErrDeadlineExceeded", err)
		}
	})
}
