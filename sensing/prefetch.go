package sensing

import (
	"slices"

	"github.com/sensorreadings/readings/store"
)

// prefetch reads a Source in a goroutine of its own, each reading checked,
// up to prefetchBlocks blocks of readings ahead of the write, so that
// parsing a file overlaps with PostgreSQL's storing it: a file's one
// request would otherwise use one core at a time, the service's or
// PostgreSQL's. Its memory is those blocks', whatever the file's length.
type prefetch struct {
	ready chan *readingBlock // filled, in the source's order
	free  chan *readingBlock // for the reader to fill
	stop  chan struct{}      // closed by close: read no further
	done  chan struct{}      // closed when the reader has stopped reading src
	cur   *readingBlock      // being given out by Next
	next  int                // in cur
}

// readingBlock is a block of readings the reader copied out of the
// source, and how the source ended after them, if it did.
type readingBlock struct {
	readings []store.Reading
	ids      []int64
	values   []float64
	end      bool  // the source ended after these readings
	err      error // with this error, if any
}

const (
	prefetchBlock  = 512 // readings
	prefetchBlocks = 16  // filled ahead: more than a stream's chunk (streamChunk)
)

// startPrefetch starts reading src, checking each reading with check. The
// caller must close the prefetch once it needs no more readings, and
// before it reads anything else of src.
func startPrefetch(src Source, check checks) *prefetch {
	p := &prefetch{
		ready: make(chan *readingBlock, prefetchBlocks),
		free:  make(chan *readingBlock, prefetchBlocks+1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	for range prefetchBlocks + 1 {
		p.free <- &readingBlock{}
	}
	go p.read(src, check)
	return p
}

// read fills free blocks from src until it ends or the prefetch is closed.
func (p *prefetch) read(src Source, check checks) {
	defer close(p.done)
	for {
		var b *readingBlock
		select {
		case b = <-p.free:
		case <-p.stop:
			return
		}
		b.fill(src, check)
		select {
		case p.ready <- b:
		case <-p.stop:
			return
		}
		if b.end {
			return
		}
	}
}

// fill reads the next readings of src into b, up to prefetchBlock.
func (b *readingBlock) fill(src Source, check checks) {
	b.readings, b.ids, b.values = b.readings[:0], b.ids[:0], b.values[:0]
	for len(b.readings) < prefetchBlock {
		r, err := src.Next()
		if err == nil && r != nil {
			err = check.reading(r, src)
		}
		if err != nil || r == nil {
			b.end, b.err = true, err
			return
		}
		// A file's lines mostly feed the same inputs: a reading shares the
		// ids of the one before when they are equal.
		var ids []int64
		if n := len(b.readings); n > 0 && slices.Equal(b.readings[n-1].InputIDs, r.InputIDs) {
			ids = b.readings[n-1].InputIDs
		} else {
			start := len(b.ids)
			b.ids = append(b.ids, r.InputIDs...)
			ids = b.ids[start:len(b.ids):len(b.ids)]
		}
		start := len(b.values)
		b.values = append(b.values, r.Values...)
		b.readings = append(b.readings, store.Reading{Time: r.Time, InputIDs: ids, Values: b.values[start:len(b.values):len(b.values)]})
	}
}

// Next returns the source's next reading, checked, valid until the
// following call; nil after the last, or the source's or a check's error.
func (p *prefetch) Next() (*store.Reading, error) {
	for p.cur == nil || p.next == len(p.cur.readings) {
		if p.cur != nil {
			if p.cur.end {
				return nil, p.cur.err
			}
			p.free <- p.cur
		}
		p.cur, p.next = <-p.ready, 0
	}
	p.next++
	return &p.cur.readings[p.next-1], nil
}

// close stops the reader and waits until it has stopped reading the
// source: at most the reading it is at.
func (p *prefetch) close() {
	close(p.stop)
	<-p.done
}
