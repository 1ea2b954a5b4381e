package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// bareClient sends GET requests one at a time on a connection of its own,
// as the bytes Go's http.Client sends for them, and reads each answer by
// its Content-Length: the least an HTTP/1.1 client does, as the raw
// calls' pgx reads its answers on the caller's goroutine. Rows 6, 6b and
// 10b are judged with it: Go's http.Client writes each request and reads
// each answer on goroutines of its own and hands both over to the
// caller's, which cost the served side alone 140–340 µs a request on
// this machine (docs/performance.md, branch latest13).
type bareClient struct {
	conn    net.Conn
	br      *bufio.Reader
	host    string
	token   string
	request []byte
	body    []byte
}

// dialBare connects a bareClient to the service, with the bench's token.
func (s *service) dialBare() (*bareClient, error) {
	addr := strings.TrimPrefix(s.base, "http://")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("bare client: %w", err)
	}
	return &bareClient{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), host: addr, token: s.token}, nil
}

// get sends a GET of path (with its query) and reads its answer, which
// must be a 200 with a Content-Length, into c.body.
func (c *bareClient) get(path string) error {
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return err
	}
	c.request = append(c.request[:0], "GET "...)
	c.request = append(c.request, path...)
	c.request = append(c.request, " HTTP/1.1\r\nHost: "...)
	c.request = append(c.request, c.host...)
	c.request = append(c.request, "\r\nUser-Agent: Go-http-client/1.1\r\nAuthorization: Bearer "...)
	c.request = append(c.request, c.token...)
	c.request = append(c.request, "\r\n\r\n"...)
	if _, err := c.conn.Write(c.request); err != nil {
		return fmt.Errorf("bare client: %w", err)
	}
	status, err := c.br.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("bare client: %w", err)
	}
	ok := bytes.HasPrefix(status, []byte("HTTP/1.1 200 "))
	length := -1
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("bare client: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if bytes.EqualFold(name, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return fmt.Errorf("bare client: Content-Length %q", value)
			}
		}
	}
	if length < 0 {
		return fmt.Errorf("bare client: %s: an answer without Content-Length", bytes.TrimSpace(status))
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.br, c.body); err != nil {
		return fmt.Errorf("bare client: %w", err)
	}
	if !ok {
		return fmt.Errorf("bare client: %s: %s", bytes.TrimSpace(status), truncate(c.body))
	}
	return nil
}

func (c *bareClient) Close() error { return c.conn.Close() }
