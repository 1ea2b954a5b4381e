package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An ack log has one line per event, in the order they happened:
//
//	sent SENSOR TAG READINGS MICROS   before the batch's request is sent
//	ack SENSOR TAG READINGS MICROS    once the service answered it 200
//
// MICROS is when, in Unix microseconds, so that verify -until can tell the
// batches a restore to a point in time must hold from those it must not.
// Logs of older loads, without it, are read too.
//
// Every batch ever sent is there, so verify can check the unacknowledged
// ones for partial presence too. Each line is written straight to the file,
// not buffered, so the log is exact up to the moment the process stops,
// however it stops.
type ackLog struct {
	mu   sync.Mutex
	f    *os.File
	path string
	err  error // the first write error, reported by Close
}

// createAckLog creates (truncating) the log at path. An empty path gives a
// nil *ackLog, which records nothing.
func createAckLog(path string) (*ackLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("ack log: %w", err)
	}
	return &ackLog{f: f, path: path}, nil
}

func (l *ackLog) sent(sensor, tag int64, n int) { l.write("sent", sensor, tag, n) }
func (l *ackLog) ack(sensor, tag int64, n int)  { l.write("ack", sensor, tag, n) }

func (l *ackLog) write(event string, sensor, tag int64, n int) {
	if l == nil {
		return
	}
	line := fmt.Appendf(nil, "%s %d %d %d %d\n", event, sensor, tag, n, time.Now().UnixMicro())
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(line); err != nil && l.err == nil {
		l.err = err
	}
}

// Close closes the file and reports the first write that failed: a log
// that missed a line cannot be trusted by verify.
func (l *ackLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := errors.Join(l.err, l.f.Close())
	if err != nil {
		return fmt.Errorf("ack log %s: %w", l.path, err)
	}
	return nil
}

// sentBatch is one batch an ack log names.
type sentBatch struct {
	sensor, tag     int64
	readings        int
	acked           bool
	sentAt, ackedAt time.Time // zero in a log without times
}

// readAckLogs reads the logs into one list of batches, in the order they
// were sent. A tag sent twice, an ack of a batch never sent, or an ack that
// disagrees with its send is an error: the logs would not say what happened.
func readAckLogs(paths []string) ([]sentBatch, error) {
	var batches []sentBatch
	byTag := map[int64]int{} // tag → index in batches
	for _, path := range paths {
		if err := readAckLog(path, &batches, byTag); err != nil {
			return nil, err
		}
	}
	return batches, nil
}

func readAckLog(path string, batches *[]sentBatch, byTag map[int64]int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("ack log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		b, event, err := parseAckLine(sc.Text())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		i, seen := byTag[b.tag]
		switch {
		case event == "sent" && seen:
			return fmt.Errorf("%s:%d: batch %d sent twice", path, line, b.tag)
		case event == "sent":
			byTag[b.tag] = len(*batches)
			*batches = append(*batches, b)
		case !seen:
			return fmt.Errorf("%s:%d: batch %d acknowledged but never sent", path, line, b.tag)
		case (*batches)[i].sensor != b.sensor || (*batches)[i].readings != b.readings:
			return fmt.Errorf("%s:%d: batch %d acknowledged with another sensor or size than it was sent with", path, line, b.tag)
		default:
			(*batches)[i].acked = true
			(*batches)[i].ackedAt = b.sentAt
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("ack log %s: %w", path, err)
	}
	return nil
}

func parseAckLine(line string) (sentBatch, string, error) {
	fields := strings.Fields(line)
	if len(fields) < 4 || len(fields) > 5 || (fields[0] != "sent" && fields[0] != "ack") {
		return sentBatch{}, "", fmt.Errorf("malformed line %q", line)
	}
	var nums [4]int64
	for i, s := range fields[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return sentBatch{}, "", fmt.Errorf("malformed line %q", line)
		}
		nums[i] = n
	}
	// The event's time goes in sentAt, whichever event it is.
	b := sentBatch{sensor: nums[0], tag: nums[1], readings: int(nums[2])}
	if len(fields) == 5 {
		b.sentAt = time.UnixMicro(nums[3])
	}
	if err := checkBatch(b.tag, b.readings); err != nil {
		return sentBatch{}, "", err
	}
	return b, fields[0], nil
}
