package store

import (
	"encoding/binary"
	"io"
	"slices"
	"time"
)

// streamSource encodes the stream's readings as a COPY reads them, and
// notes what the merge needs to know of them. A straight COPY into
// readings ends before a reading that is not after the one before, which
// it holds for the stage's COPY.
type streamSource struct {
	stream   ReadingStream
	sensorID int64
	err      error    // the stream's
	held     *Reading // read and not yet written: heldBuf, or nil
	heldBuf  Reading

	straight bool // this COPY goes into readings
	phase    phase
	started  bool
	done     bool
	buf      []byte
	pending  []byte
	idField  idsField // of the row encoded last

	seq    int64   // readings written, all COPYs
	ids    []int64 // every input id, ascending, once
	newest Reading // of the latest instant, the last there; its own copy
	hours  streamHours
}

// streamHours are the hours of a stream's readings, for the rollups' queue,
// noted as they pass so that nothing reads them back: each hour once while
// the readings come in order, again where they jump back. Past
// maxStreamHours (readings hours apart) they are given up and the queue
// reads the hours from the readings written.
type streamHours struct {
	starts     []time.Time // each hour's start, as the readings came
	start, end time.Time   // of the last reading's hour
	many       bool        // more than maxStreamHours: starts given up
}

// maxStreamHours bounds the memory of a stream's hours (24 bytes each):
// a file of the largest body with a reading every second spans 200 hours.
const maxStreamHours = 20_000

// note notes the hour of t.
func (h *streamHours) note(t time.Time) {
	if h.many || (t.Before(h.end) && !t.Before(h.start)) {
		return
	}
	h.start = t.Truncate(time.Hour)
	h.end = h.start.Add(time.Hour)
	if len(h.starts) == maxStreamHours {
		h.starts, h.many = nil, true
		return
	}
	h.starts = append(h.starts, h.start)
}

// list is the hours noted, ascending, each once; ok is false where they
// were given up.
func (h *streamHours) list() (hours []time.Time, ok bool) {
	if h.many {
		return nil, false
	}
	slices.SortFunc(h.starts, time.Time.Compare)
	return slices.CompactFunc(h.starts, time.Time.Equal), true
}

// peek reads the stream's first reading, and holds it.
func (s *streamSource) peek() error {
	r, err := s.stream.Next()
	if err != nil || r == nil {
		return err
	}
	s.hold(r)
	return nil
}

func (s *streamSource) hold(r *Reading) {
	s.heldBuf = Reading{Time: r.Time, InputIDs: append(s.heldBuf.InputIDs[:0], r.InputIDs...), Values: append(s.heldBuf.Values[:0], r.Values...)}
	s.held = &s.heldBuf
}

// chunk appends to buf, up to its capacity, the stream's next readings
// while each is after the one before in this phase and not after until,
// and holds the first that is not. The readings appended reuse the
// memory of buf's elements.
func (s *streamSource) chunk(buf []Reading, until time.Time) ([]Reading, error) {
	for len(buf) < cap(buf) {
		r := s.held
		s.held = nil
		if r == nil {
			var err error
			if r, err = s.stream.Next(); err != nil || r == nil {
				return buf, err
			}
		}
		if r.Time.After(until) || (s.phase.count > 0 && !r.Time.After(s.phase.last)) {
			s.hold(r)
			break
		}
		s.note(r)
		buf = buf[:len(buf)+1]
		c := &buf[len(buf)-1]
		c.Time, c.InputIDs, c.Values = r.Time, append(c.InputIDs[:0], r.InputIDs...), append(c.Values[:0], r.Values...)
	}
	return buf, nil
}

// begin starts a COPY: into readings when straight, else into the stage.
func (s *streamSource) begin(straight bool) {
	s.straight, s.phase = straight, phase{}
	s.started, s.done, s.pending = false, false, nil
}

// failure is the error of a COPY that failed: the stream's own, which the
// COPY passed on, or the COPY's.
func (s *streamSource) failure(err error) error {
	if s.err != nil {
		return s.err
	}
	return err
}

func (s *streamSource) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.pending) == 0 {
			if s.done {
				break
			}
			if err := s.encode(); err != nil {
				s.err = err
				return n, err
			}
		}
		c := copy(p[n:], s.pending)
		s.pending = s.pending[c:]
		n += c
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// copyChunk is how much a stream's COPY encodes at a time: about half of
// the 64 KiB that pgconn reads for each CopyData message.
const copyChunk = 32 << 10

// encode fills pending with the next readings, the header before the first
// and the trailer after the last.
func (s *streamSource) encode() error {
	b := s.buf[:0]
	if !s.started {
		b = append(b, copySignature...)
		s.started = true
	}
	for len(b) < copyChunk {
		r := s.held
		s.held = nil
		if r == nil {
			var err error
			if r, err = s.stream.Next(); err != nil {
				return err
			}
		}
		if r != nil && s.straight && s.phase.count > 0 && !r.Time.After(s.phase.last) {
			s.hold(r) // for the stage
			r = nil
		}
		if r == nil {
			b = binary.BigEndian.AppendUint16(b, 0xffff)
			s.done = true
			break
		}
		s.note(r)
		first := s.seq // the stage's order of the stream
		if s.straight {
			first = s.sensorID
		}
		b = appendCopyRow(b, first, r, &s.idField)
	}
	s.buf, s.pending = b, b
	return nil
}

// note counts r and keeps what the merge needs of it.
func (s *streamSource) note(r *Reading) {
	s.seq++
	p := &s.phase
	p.count++
	if p.count == 1 {
		p.first, p.last, p.ordered = r.Time, r.Time, true
	}
	p.ordered = p.ordered && (p.count == 1 || r.Time.After(p.last))
	if r.Time.Before(p.first) {
		p.first = r.Time
	}
	if r.Time.After(p.last) {
		p.last = r.Time
	}
	s.hours.note(r.Time)
	if s.seq == 1 || !r.Time.Before(s.newest.Time) {
		s.newest = Reading{Time: r.Time, InputIDs: append(s.newest.InputIDs[:0], r.InputIDs...), Values: append(s.newest.Values[:0], r.Values...)}
	}
	for _, id := range r.InputIDs {
		if i, found := slices.BinarySearch(s.ids, id); !found {
			s.ids = slices.Insert(s.ids, i, id)
		}
	}
}
