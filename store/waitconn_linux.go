package store

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"
)

// waitingConn is a connection to PostgreSQL whose read, when nothing has
// arrived yet, first waits for it in the kernel, up to wait, before
// parking the goroutine on Go's poller. A page's rows come in
// PostgreSQL's sends of 8 kB, about as fast as the service handles them,
// so its reader finds the socket empty some 30 times a page; each such
// park costs the runtime a poller's wait, a thread woken by futex and a
// spin of its scheduler, where a thread asleep in ppoll is woken by the
// socket itself. A read still parks, deadlines and all, once wait has
// passed: the wait only delays noticing a deadline by at most wait.
type waitingConn struct {
	net.Conn
	raw  syscall.RawConn
	wait time.Duration
	// The read under way, kept here rather than in a closure per read
	// (reads of a connection are not concurrent): its buffer, what the
	// last read(2) gave, whether it waited already, and tryRead bound once.
	p       []byte
	n       int
	err     error
	waited  bool
	tryRead func(fd uintptr) bool
}

// waitingDial wraps dial's connections in waitingConn, those it can.
func waitingDial(dial pgconn.DialFunc, wait time.Duration) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			return c, nil
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return c, nil
		}
		w := &waitingConn{Conn: c, raw: raw, wait: wait}
		w.tryRead = w.readFD
		return w, nil
	}
}

func (c *waitingConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return c.Conn.Read(p)
	}
	c.p, c.waited = p, false
	rerr := c.raw.Read(c.tryRead)
	n, err := c.n, c.err
	c.p, c.err = nil, nil
	if rerr == nil && err != nil {
		rerr = os.NewSyscallError("read", err)
	}
	if rerr != nil {
		// As net's own reads report them: a deadline's error stays a
		// net.Error whose Timeout is true.
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readFD reads fd into c.p; when nothing has arrived, it waits up to
// c.wait in ppoll, once, then leaves the wait to Go's poller (false).
func (c *waitingConn) readFD(fd uintptr) bool {
	for {
		c.n, c.err = syscall.Read(int(fd), c.p)
		switch {
		case c.err == syscall.EINTR:
			continue
		case c.err != syscall.EAGAIN:
			return true
		case c.waited:
			return false
		}
		c.waited = true
		fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		timeout := unix.NsecToTimespec(c.wait.Nanoseconds())
		if _, err := unix.Ppoll(fds[:], &timeout, nil); err != nil && !errors.Is(err, syscall.EINTR) {
			return false
		}
	}
}
