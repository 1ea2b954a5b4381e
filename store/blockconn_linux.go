package store

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"
)

// blockingSlice bounds each blocking read or write of a blockingConn,
// so that a deadline set while one is under way (pgconn's answer to a
// cancelled context) is seen within it.
const blockingSlice = 5 * time.Millisecond

// blockingConn is a connection to PostgreSQL whose reads and writes are
// blocking system calls, outside Go's poller. A page's rows come in
// PostgreSQL's 8 kB sends about as fast as the service handles them, so
// a reader under net's conn finds the socket empty some 30 times a page,
// and each time parks, wakes the poller's thread and spins the
// scheduler; and each send wakes the thread asleep in epoll_wait, even
// while the reader is busy. Asleep in read(2), the thread is woken by the
// socket alone, which costs a page less CPU (docs/performance.md,
// branch page16). Deadlines keep net's meaning: a call whose deadline
// has passed fails with os.ErrDeadlineExceeded and leaves the
// connection usable; one set while a call blocks is seen within
// blockingSlice.
type blockingConn struct {
	laddr, raddr net.Addr

	mu     sync.Mutex // guards fd's life: it is closed once closed and no call uses it
	fd     int
	refs   int
	closed atomic.Bool

	readDeadline, writeDeadline atomic.Int64 // UnixNano; 0: none
}

// netConnKey marks a context whose connections keep net's conn: one that
// waits long for nothing (store.Listen) would wake every blockingSlice.
type netConnKey struct{}

// blockingDial makes dial's connections blockingConns, unless ctx says
// otherwise (netConnKey) or the connection has no file descriptor.
// Connecting stays dial's, bound by its context and connect_timeout.
func blockingDial(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil || ctx.Value(netConnKey{}) != nil {
			return c, err
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			return c, nil
		}
		b, err := detach(c, sc)
		if err != nil {
			c.Close()
			return nil, err
		}
		return b, nil
	}
}

// detach takes c's socket out of Go's poller: a duplicate of its file
// descriptor, in blocking mode, each call bounded by blockingSlice, and
// c closed, which deregisters it from the poller and leaves the socket
// open through the duplicate.
func detach(c net.Conn, sc syscall.Conn) (*blockingConn, error) {
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, os.NewSyscallError("fcntl", dupErr)
	}
	tv := syscall.NsecToTimeval(blockingSlice.Nanoseconds())
	for _, err := range []error{
		syscall.SetNonblock(fd, false),
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv),
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv),
	} {
		if err != nil {
			syscall.Close(fd)
			return nil, os.NewSyscallError("detach", err)
		}
	}
	b := &blockingConn{laddr: c.LocalAddr(), raddr: c.RemoteAddr(), fd: fd}
	c.Close()
	return b, nil
}

// acquire counts a call on fd, unless the connection is closed.
func (c *blockingConn) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.refs++
	return true
}

func (c *blockingConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs--; c.refs == 0 && c.closed.Load() {
		syscall.Close(c.fd)
	}
}

func (c *blockingConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.raddr.Network(), Source: c.laddr, Addr: c.raddr, Err: err}
}

// passed tells whether deadline (UnixNano, 0: none) has passed.
func passed(deadline *atomic.Int64) bool {
	d := deadline.Load()
	return d != 0 && time.Now().UnixNano() >= d
}

func (c *blockingConn) Read(p []byte) (int, error) {
	if !c.acquire() {
		return 0, c.opError("read", net.ErrClosed)
	}
	defer c.release()
	for {
		if passed(&c.readDeadline) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		if len(p) == 0 {
			return 0, nil
		}
		n, err := syscall.Read(c.fd, p)
		switch {
		case c.closed.Load():
			return 0, c.opError("read", net.ErrClosed)
		case err == syscall.EINTR || err == syscall.EAGAIN: // a slice has passed
			continue
		case err != nil:
			return 0, c.opError("read", os.NewSyscallError("read", err))
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockingConn) Write(p []byte) (int, error) {
	if !c.acquire() {
		return 0, c.opError("write", net.ErrClosed)
	}
	defer c.release()
	written := 0
	for written < len(p) {
		if passed(&c.writeDeadline) {
			return written, c.opError("write", os.ErrDeadlineExceeded)
		}
		n, err := syscall.Write(c.fd, p[written:])
		if n > 0 {
			written += n
		}
		switch {
		case c.closed.Load():
			return written, c.opError("write", net.ErrClosed)
		case err == syscall.EINTR || err == syscall.EAGAIN:
			continue
		case err != nil:
			return written, c.opError("write", os.NewSyscallError("write", err))
		}
	}
	return written, nil
}

// Close shuts the socket down, which wakes a call blocked on it, and
// closes it once no call uses it, so that its number is not reused under
// one.
func (c *blockingConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Swap(true) {
		return c.opError("close", net.ErrClosed)
	}
	syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	if c.refs == 0 {
		return os.NewSyscallError("close", syscall.Close(c.fd))
	}
	return nil
}

func (c *blockingConn) LocalAddr() net.Addr  { return c.laddr }
func (c *blockingConn) RemoteAddr() net.Addr { return c.raddr }

func (c *blockingConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *blockingConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	return nil
}

func (c *blockingConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(unixNano(t))
	return nil
}

// unixNano is t as a deadline: 0 for none.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}
