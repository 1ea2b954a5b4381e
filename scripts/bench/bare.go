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
// its Content-Length: the least an HTTP/1.1 client does. Row 10c reads
// latest values with it, so that what of row 10b's time is the service
// and what is the bench's http.Client (whose goroutines write the request
// and read the answer, handing both over to the caller's) shows in one
// run.
type bareClient struct {
	conn    net.Conn
	br      *bufio.Reader
	request []byte
	body    []byte
}

// dialBare connects a bareClient to the service for GETs of path (with
// its query), with the bench's token.
func (s *service) dialBare(path string) (*bareClient, error) {
	addr := strings.TrimPrefix(s.base, "http://")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("bare client: %w", err)
	}
	return &bareClient{
		conn: conn,
		br:   bufio.NewReaderSize(conn, 64<<10),
		request: []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: Go-http-client/1.1\r\n" +
			"Authorization: Bearer " + s.token + "\r\n\r\n"),
	}, nil
}

// get sends the request and reads its answer, which must be a 200 with a
// Content-Length, into c.body.
func (c *bareClient) get() error {
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return err
	}
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
