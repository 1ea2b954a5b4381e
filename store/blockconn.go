package store

// SCRATCH (branch page16, not merged): connections to PostgreSQL whose
// reads block in the kernel, outside Go's poller.

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type blockConn struct {
	fd           int
	laddr, raddr net.Addr
	mu           sync.Mutex
	timer        *time.Timer
	dead         atomic.Bool
	closed       atomic.Bool
}

func dialBlocking(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	ra, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	ip4 := ra.IP.To4()
	if ip4 == nil {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	sa := &syscall.SockaddrInet4{Port: ra.Port}
	copy(sa.Addr[:], ip4)
	for {
		err = syscall.Connect(fd, sa)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	c := &blockConn{fd: fd, raddr: ra, laddr: &net.TCPAddr{}}
	if lsa, err := syscall.Getsockname(fd); err == nil {
		if l, ok := lsa.(*syscall.SockaddrInet4); ok {
			c.laddr = &net.TCPAddr{IP: net.IP(l.Addr[:]), Port: l.Port}
		}
	}
	return c, nil
}

func (c *blockConn) err(op string, err error) error {
	if c.dead.Load() {
		err = os.ErrDeadlineExceeded
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.laddr, Addr: c.raddr, Err: err}
}

func (c *blockConn) Read(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, c.err("read", nil)
	}
	for {
		n, err := syscall.Read(c.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, c.err("read", os.NewSyscallError("read", err))
		}
		if n == 0 && len(p) > 0 {
			if c.dead.Load() {
				return 0, c.err("read", nil)
			}
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		if c.dead.Load() {
			return written, c.err("write", nil)
		}
		n, err := syscall.Write(c.fd, p[written:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return written, c.err("write", os.NewSyscallError("write", err))
		}
		written += n
	}
	return written, nil
}

func (c *blockConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	return syscall.Close(c.fd)
}

func (c *blockConn) LocalAddr() net.Addr  { return c.laddr }
func (c *blockConn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline: a deadline that passes shuts the connection down.
func (c *blockConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if t.IsZero() || c.dead.Load() {
		return nil
	}
	kill := func() {
		c.dead.Store(true)
		syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
	if d := time.Until(t); d <= 0 {
		kill()
	} else {
		c.timer = time.AfterFunc(d, kill)
	}
	return nil
}
func (c *blockConn) SetReadDeadline(t time.Time) error  { return c.SetDeadline(t) }
func (c *blockConn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }
