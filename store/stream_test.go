package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// sliceStream yields readings, reusing one Reading as a file reader does,
// and fails with err at reading failAt (when err is set).
type sliceStream struct {
	readings []store.Reading
	next     int
	failAt   int
	err      error
	current  store.Reading
}

func (s *sliceStream) Next() (*store.Reading, error) {
	if s.err != nil && s.next == s.failAt {
		return nil, s.err
	}
	if s.next == len(s.readings) {
		return nil, nil
	}
	r := s.readings[s.next]
	s.next++
	s.current.Time = r.Time
	s.current.InputIDs = append(s.current.InputIDs[:0], r.InputIDs...)
	s.current.Values = append(s.current.Values[:0], r.Values...)
	return &s.current, nil
}

func at(minute int) time.Time { return time.Date(2024, 5, 1, 0, minute, 0, 0, time.UTC) }

func one(minute int, v float64) store.Reading {
	return store.Reading{Time: at(minute), InputIDs: []int64{1}, Values: []float64{v}}
}

// storedReadings lists the sensor's readings as "minute=value".
func storedReadings(t *testing.T, db *store.DB, key store.SensorKey) string {
	t.Helper()
	var out []string
	err := db.ListReadings(t.Context(), store.Sensor{ID: key.SensorID}, store.ReadingQuery{From: store.MinTime, To: store.MaxTime}, func(r *store.Reading) error {
		out = append(out, fmt.Sprintf("%d=%v", r.Time.Minute(), r.Values))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

func TestCopyReadingStream(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"NewReplacedAndLaterWins": func(t *testing.T, db *store.DB) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			if _, err := insert(t.Context(), db, key, []store.Reading{one(1, 10), one(2, 20)}); err != nil {
				t.Fatal(err)
			}
			// Out of order, minute 1 twice: the later wins, and counts once.
			stream := &sliceStream{readings: []store.Reading{one(3, 3), one(1, 1), one(0, 0), one(1, 11)}}
			written, err := insertStream(t.Context(), db, key, stream)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := written, (store.Written{New: 2, Replaced: 1}); got != want {
				t.Errorf("written %+v, want %+v", got, want)
			}
			if got, want := storedReadings(t, db, key), "0=[0] 1=[11] 2=[20] 3=[3]"; got != want {
				t.Errorf("stored %s, want %s", got, want)
			}
			latest, _, err := db.LatestReadings(t.Context(), key.OrgID, key.ProjectID, 0, 10, true)
			if err != nil || len(latest) != 1 || latest[0].Reading == nil || !latest[0].Reading.Time.Equal(at(3)) {
				t.Errorf("latest %+v, %v; want minute 3", latest, err)
			}
		},
		"StraightThenStaged": func(t *testing.T, db *store.DB) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			if _, err := insert(t.Context(), db, key, []store.Reading{one(1, 10), one(2, 20)}); err != nil {
				t.Fatal(err)
			}
			// 3, 4, 5 go straight in; from the second 4 on, staged: 4 again
			// (the stream's own, counted new once), 6 new, 1 replaced.
			stream := &sliceStream{readings: []store.Reading{one(3, 3), one(4, 4), one(5, 5), one(4, 44), one(6, 6), one(1, 1)}}
			written, err := insertStream(t.Context(), db, key, stream)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := written, (store.Written{New: 4, Replaced: 1}); got != want {
				t.Errorf("written %+v, want %+v", got, want)
			}
			if got, want := storedReadings(t, db, key), "1=[1] 2=[20] 3=[3] 4=[44] 5=[5] 6=[6]"; got != want {
				t.Errorf("stored %s, want %s", got, want)
			}
		},
		"OverwriteCounts": func(t *testing.T, db *store.DB) {
			for _, c := range []struct {
				name   string
				stream []store.Reading
				want   store.Written
				stored string
			}{
				// Stored: 1, 3, 5. In order and not after 5: chunks.
				{"OrderedReupload", []store.Reading{one(1, 1), one(3, 3), one(5, 5)}, store.Written{Replaced: 3}, "1=[1] 3=[3] 5=[5]"},
				{"PartialOverlap", []store.Reading{one(0, 0), one(1, 1), one(2, 2), one(5, 5), one(6, 6), one(7, 7)}, store.Written{New: 4, Replaced: 2}, "0=[0] 1=[1] 2=[2] 3=[30] 5=[5] 6=[6] 7=[7]"},
				// Chunked 1, 2, 3; staged from the second 2: 2 again and 3
				// again (the stream's, counted once), 5 replaced once, 4 new.
				{"OutOfOrderAfterOverlap", []store.Reading{one(1, 1), one(2, 2), one(3, 3), one(2, 22), one(5, 5), one(3, 33), one(4, 4), one(5, 55)}, store.Written{New: 2, Replaced: 3}, "1=[1] 2=[22] 3=[33] 4=[4] 5=[55]"},
				// Chunked 1, 3; straight 6, 7; staged 3, 7, 5: replaced 1, 3, 5.
				{"AllThreePhases", []store.Reading{one(1, 1), one(3, 3), one(6, 6), one(7, 7), one(3, 33), one(7, 77), one(5, 55)}, store.Written{New: 2, Replaced: 3}, "1=[1] 3=[33] 5=[55] 6=[6] 7=[77]"},
			} {
				t.Run(c.name, func(t *testing.T) {
					key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
					if _, err := insert(t.Context(), db, key, []store.Reading{one(1, 10), one(3, 30), one(5, 50)}); err != nil {
						t.Fatal(err)
					}
					written, err := insertStream(t.Context(), db, key, &sliceStream{readings: c.stream})
					if err != nil {
						t.Fatal(err)
					}
					if got := written; got != c.want {
						t.Errorf("written %+v, want %+v", got, c.want)
					}
					if got := storedReadings(t, db, key); got != c.stored {
						t.Errorf("stored %s, want %s", got, c.stored)
					}
				})
			}
		},
		"OverwriteManyChunks": func(t *testing.T, db *store.DB) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			// Every other second stored; the stream is every second, past
			// several chunks, then one out of order.
			const n = 12_000
			var stored, stream []store.Reading
			for i := range n {
				r := store.Reading{Time: at(0).Add(time.Duration(i) * time.Second), InputIDs: []int64{1}, Values: []float64{float64(i)}}
				if i%2 == 0 {
					stored = append(stored, store.Reading{Time: r.Time, InputIDs: r.InputIDs, Values: []float64{-1}})
				}
				stream = append(stream, r)
			}
			if _, err := insert(t.Context(), db, key, stored); err != nil {
				t.Fatal(err)
			}
			stream = append(stream, stream[0], stream[1])
			written, err := insertStream(t.Context(), db, key, &sliceStream{readings: stream})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := written, (store.Written{New: n / 2, Replaced: n / 2}); got != want {
				t.Errorf("written %+v, want %+v", got, want)
			}
			var count int
			err = db.ListReadings(t.Context(), store.Sensor{ID: key.SensorID}, store.ReadingQuery{From: store.MinTime, To: store.MaxTime}, func(r *store.Reading) error {
				if want := float64(r.Time.Sub(at(0)) / time.Second); r.Values[0] != want {
					t.Fatalf("at %s: %v, want %v", r.Time, r.Values[0], want)
				}
				count++
				return nil
			})
			if err != nil || count != n {
				t.Errorf("%d readings stored, %v; want %d", count, err, n)
			}
		},
		"StreamErrorStoresNothing": func(t *testing.T, db *store.DB) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			bad := apperr.Errorf(apperr.Invalid, "line 4, column freq: not a number")
			readings := make([]store.Reading, 20_000) // past the first COPY message
			for i := range readings {
				readings[i] = store.Reading{Time: at(0).Add(time.Duration(i) * time.Second), InputIDs: []int64{int64(i%3 + 1)}, Values: []float64{1}}
			}
			_, err := insertStream(t.Context(), db, key, &sliceStream{readings: readings, failAt: 15_000, err: bad})
			if !errors.Is(err, bad) {
				t.Fatalf("err %v, want the stream's", err)
			}
			if got := storedReadings(t, db, key); got != "" {
				t.Errorf("stored %s, want nothing", got)
			}
			ids, err := db.InputIDs(t.Context(), store.Sensor{ID: key.SensorID})
			if err != nil || len(ids) != 0 {
				t.Errorf("input ids %v, %v; want none recorded", ids, err)
			}
		},
		"ReadingsAsStoredInChunks": func(t *testing.T, db *store.DB) {
			// Stored: 1, 3, 5. The stream overwrites 1 and 3 a chunk at a
			// time, adds 6 and 7 straight, then stages 3 again and 2: its
			// readings as stored are 1, 2, 3, 6, 7, not 5, in chunks of 2.
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			mustInsert(t, db, key, one(1, 10), one(3, 30), one(5, 50))
			stream := &sliceStream{readings: []store.Reading{one(1, 1), one(3, 3), one(6, 6), one(7, 7), one(3, 33), one(2, 2)}}
			var chunks [][]string
			err := db.InTxOnce(t.Context(), func(tx *store.Tx) error {
				w, err := tx.LockSensorWrite(t.Context(), key, nil)
				if err != nil {
					return err
				}
				sw, err := tx.CopyReadingStream(t.Context(), w, stream)
				if err != nil {
					return err
				}
				if !slices.Equal(sw.InputIDs(), []int64{1}) || sw.Newest().Time.Minute() != 7 {
					t.Errorf("input ids %v, newest %v; want [1] and minute 7", sw.InputIDs(), sw.Newest().Time)
				}
				if _, err := sw.Merge(t.Context()); err != nil {
					return err
				}
				return sw.Readings(t.Context(), 2, func(chunk []store.Reading) error {
					var got []string
					for _, r := range chunk {
						got = append(got, fmt.Sprintf("%d=%v", r.Time.Minute(), r.Values[0]))
					}
					chunks = append(chunks, got)
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(chunks), "[[1=1 2=2] [3=33 6=6] [7=7]]"; got != want {
				t.Errorf("chunks %s, want %s", got, want)
			}
		},
		"Refusals": func(t *testing.T, db *store.DB) {
			sensor, key := newBlueprintSensor(t, db)
			for name, stream := range map[string]*sliceStream{
				"Empty":        {},
				"UnknownInput": {readings: []store.Reading{{Time: at(0), InputIDs: []int64{sensor.Instance.Inputs[0].ID + 1000}, Values: []float64{1}}}},
			} {
				_, err := insertStream(t.Context(), db, key, stream)
				if apperr.CodeOf(err) != apperr.Invalid {
					t.Errorf("%s: err %v, want invalid", name, err)
				}
			}
			plain := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			wide := store.Reading{Time: at(0)}
			for id := range int64(store.DefaultMaxSensorInputs + 1) {
				wide.InputIDs, wide.Values = append(wide.InputIDs, id+1), append(wide.Values, 1)
			}
			_, err := insertStream(t.Context(), db, plain, &sliceStream{readings: []store.Reading{wide}})
			wantCode(t, err, apperr.Invalid)
			key.SensorID = unknownID
			_, err = insertStream(t.Context(), db, key, &sliceStream{readings: []store.Reading{one(0, 1)}})
			wantCode(t, err, apperr.NotFound)
		},
	})
}
