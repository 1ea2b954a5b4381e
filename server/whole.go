package server

import (
	"context"
	"io"
	"net"
	"sync"
)

// net/http writes an answer of more than 4 kB in two system calls at
// least: its headers with the body's first bytes, the connection's 4 kB
// buffer, then the rest. The client, woken by the first, reads it, finds
// the body short and sleeps until the second: two wake-ups where one
// would do, on the path of every request for a project's latest values
// (37 kB; docs/performance.md, branch latest16) and of every page of
// readings (400 kB for 1,000 readings of 15 values, branch page17a). An
// answer built whole before it is written can go in one writev instead,
// over the connections of Listener.

// Listener wraps the connections of ln so that an answer built whole is
// sent, headers and body, in one system call (writeWhole). It is for a
// server of HTTP/1.1 in the clear whose ConnContext is ConnContext: over
// TLS the answer is cut into records anyway, and HTTP/2 writes a
// connection's frames from a goroutine of its own.
func Listener(ln net.Listener) net.Listener { return wholeListener{ln} }

type wholeListener struct{ net.Listener }

func (l wholeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &wholeConn{Conn: c}, nil
}

// ConnContext gives the requests of a connection of Listener their
// connection, for writeWhole.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if wc, ok := c.(*wholeConn); ok {
		return context.WithValue(ctx, wholeConnKey{}, wc)
	}
	return ctx
}

type wholeConnKey struct{}

// wholeConnOf is the connection of Listener that ctx's request came on,
// or nil.
func wholeConnOf(ctx context.Context) *wholeConn {
	c, _ := ctx.Value(wholeConnKey{}).(*wholeConn)
	return c
}

// wholeConn holds its first write while asked to (hold) and sends it with
// the next in one writev, or alone at release.
type wholeConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	held    bool // a write is held, in buf
	buf     []byte
}

func (c *wholeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		bufs := net.Buffers{c.buf, p}
		c.held, c.holding = false, false
		if _, err := bufs.WriteTo(c.Conn); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if c.holding {
		c.buf = append(c.buf[:0], p...)
		c.held = true
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite keeps what net/http does on a connection it closes after an
// answer (closeWriteAndWait): a TCP connection's half close.
func (c *wholeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *wholeConn) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// release ends hold, sending the write held if no second came.
func (c *wholeConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	if !c.held {
		return nil
	}
	c.held = false
	_, err := c.Conn.Write(c.buf)
	return err
}

// writeWhole writes body, the whole answer, to w, whose headers are set:
// over c, when the request came on a connection of Listener, the
// headers and the body's first bytes go out with the rest of it in one
// system call.
func writeWhole(c *wholeConn, w io.Writer, body []byte) error {
	if c == nil {
		_, err := w.Write(body)
		return err
	}
	c.hold()
	_, err := w.Write(body)
	if released := c.release(); err == nil {
		err = released
	}
	return err
}
