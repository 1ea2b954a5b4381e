package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Every batch a load writes is tagged so that verify can find it in the
// database without asking the service. Reading i of batch k is at
//
//	tagEpoch + k seconds + i microseconds
//
// with the inputs {"1": k, "2": i, "3": a random value}. Datetimes are
// unique per batch and per reading, so no batch overwrites another's rows
// (the service replaces a reading at an existing instant), and every stored
// row names its batch and its place in it: a batch is fully present, absent,
// or partially present, and a count says which.
const (
	inputTag   = 1
	inputIndex = 2

	// maxBatchReadings keeps a batch's readings within its one second.
	maxBatchReadings = 1_000_000
	// maxTag keeps tagEpoch + k seconds inside time.Duration's range.
	maxTag = 5_000_000_000
)

// tagEpoch is the instant of batch 0. A function, not a variable, so that
// nothing can change it.
func tagEpoch() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) }

// readingTime is the instant of reading index of batch tag.
func readingTime(tag int64, index int) time.Time {
	return tagEpoch().Add(time.Duration(tag)*time.Second + time.Duration(index)*time.Microsecond)
}

func checkBatch(tag int64, n int) error {
	if tag < 0 || tag >= maxTag {
		return fmt.Errorf("batch tag %d is outside 0 to %d", tag, maxTag-1)
	}
	if n < 1 || n > maxBatchReadings {
		return fmt.Errorf("batch size %d is outside 1 to %d", n, maxBatchReadings)
	}
	return nil
}

// appendBatch appends the JSON body of batch tag with n readings to b. It
// writes the JSON by hand: it is the load generator's hottest path, and the
// shape is fixed.
func appendBatch(b []byte, tag int64, n int, r *rand.Rand) []byte {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"datetime":"`...)
		b = readingTime(tag, i).AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
		b = append(b, `","inputs":{"`...)
		b = strconv.AppendInt(b, inputTag, 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, tag, 10)
		b = append(b, `,"`...)
		b = strconv.AppendInt(b, inputIndex, 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"3":`...)
		b = strconv.AppendFloat(b, float64(r.IntN(1_000_000))/100, 'f', -1, 64)
		b = append(b, "}}"...)
	}
	return append(b, ']')
}
