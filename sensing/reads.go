package sensing

import (
	"context"
	"slices"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// ReadingSink takes the readings of a read as they stream.
type ReadingSink interface {
	// Sensor is called before the sensor's readings, with the sensor and,
	// when outputs were asked for, its outputs (else nil): a CSV header
	// names them even on an empty page.
	Sensor(sensor store.Sensor, outputs *Outputs) error
	// Reading is called with each reading, which it must not keep, and,
	// when outputs were asked for, the outputs to compute it with (else
	// nil).
	Reading(r *store.Reading, outputs *Outputs) error
}

// ReadOptions say what a read of readings computes and shows.
type ReadOptions struct {
	Outputs bool // each reading's outputs
	// Flags lists the readings and values a flag rejects too, each
	// reading with its flags; without it they are left out, as if they
	// were not there, and only the suspect ones are marked.
	Flags bool
	// AsOf computes the outputs with the configuration in force at that
	// instant (formulas, constants, calibrations, baselines, links) and
	// applies the flags in force then; nil: now.
	AsOf *time.Time
}

// ListReadings gives sink the sensor and each reading of it q selects, in
// order, with their outputs when opts ask for them, and their flags to a
// FlagSink. It returns NotFound, and sink's errors as they are.
func (s *Service) ListReadings(ctx context.Context, key store.SensorKey, q store.ReadingQuery, opts ReadOptions, sink ReadingSink) error {
	var known *store.Sensor
	if opts.AsOf != nil || !s.readerHasSensors {
		sensor, err := s.sensorAsOf(ctx, key, opts.AsOf)
		if err != nil {
			return err
		}
		known = &sensor
	}
	// The rows' outputs name the header's too, unless links make them
	// wait for the page's readings: then the header has outputs of its
	// own, which only name them.
	head := func(sensor store.Sensor, rows *Outputs) error {
		if opts.Outputs && rows == nil {
			rows = s.outputsOf(sensor, nil)
		}
		return sink.Sensor(sensor, rows)
	}
	return s.listReadings(ctx, key, known, q, opts, head, withMarks(sink))
}

// withMarks gives a FlagSink each reading's marks before the reading.
func withMarks(sink ReadingSink) func(*store.Reading, *Outputs, []Mark) error {
	fs, ok := sink.(FlagSink)
	return func(r *store.Reading, o *Outputs, marks []Mark) error {
		if ok {
			fs.Marks(marks)
		}
		return sink.Reading(r, o)
	}
}

// sensorAsOf reads the sensor, with the instance in force at asOf when it
// is set. It returns NotFound.
func (s *Service) sensorAsOf(ctx context.Context, key store.SensorKey, asOf *time.Time) (store.Sensor, error) {
	sensor, err := s.db.GetSensor(ctx, key)
	if err != nil {
		return sensor, err
	}
	return sensor, s.instanceAsOf(ctx, &sensor, asOf)
}

// instanceAsOf gives sensor the instance in force at asOf, from the audit
// trail, when asOf is set: its formulas, constants, calibrations,
// baselines and links as they were then.
func (s *Service) instanceAsOf(ctx context.Context, sensor *store.Sensor, asOf *time.Time) error {
	if asOf == nil {
		return nil
	}
	inst, ok, err := s.db.InstanceAt(ctx, sensor.ID, *asOf)
	if ok {
		sensor.Instance = inst
	}
	return err
}

// listReadings calls head with the sensor of key (sensor, or, when it is
// nil, the one the read looks up) and the outputs its rows are computed
// with when they are known before the rows (else nil), then visit with each reading q
// selects, without the values a flag rejects unless opts.Flags, with its
// flags' marks and, when outputs are wanted, the outputs to compute it
// with (else nil). The sensor, the flags and the readings come in one
// round trip (store.DB.ReadPage), with, when outputs are wanted of a
// sensor that may have links (as far as pageHints know, when the read
// looks the sensor up), the readings of their sources over the page
// (pageLinks), or over the span pageHints guess it covers: the readings
// stream. Those the links read with the page cannot serve are held, the
// connection is released, and then each source is read once for their
// instants, before visit sees them.
func (s *Service) listReadings(ctx context.Context, key store.SensorKey, sensor *store.Sensor, q store.ReadingQuery, opts ReadOptions,
	head func(store.Sensor, *Outputs) error, visit func(*store.Reading, *Outputs, []Mark) error) error {
	var (
		flags       *flagSet
		o           *Outputs
		linked      bool
		served      bool // the links read with the page serve its readings from first to last
		first, last time.Time
		held        []store.Reading
		n           int       // the readings read
		start, end  time.Time // the first and the last
	)
	fn := func(r *store.Reading, o *Outputs) error {
		if flags == nil {
			return visit(r, o, nil)
		}
		marks := flags.lookup(r.Time)
		if !opts.Flags {
			r, _ = flags.without(r)
			marks = slices.DeleteFunc(marks, func(m Mark) bool { return m.Flag == store.Rejected })
		}
		return visit(r, o, marks)
	}
	read := store.PageRead{Key: key, Lookup: sensor == nil, Query: q, AsOf: opts.AsOf, Rejected: opts.Flags}
	if read.Lookup {
		read.Unflagged, read.NoneRejected = s.pageHints.has(key.SensorID, noFlags), s.pageHints.has(key.SensorID, noneRejected)
		read.Flagged = func(flagged, rejecting bool) {
			s.pageHints.saw(key.SensorID, noFlags, !flagged)
			s.pageHints.saw(key.SensorID, noneRejected, !rejecting)
		}
	}
	if opts.Outputs && q.Limit > 0 && (sensor == nil && !s.pageHints.has(key.SensorID, noLinks) || sensor != nil && sensor.Instance.Linked()) {
		var then map[int64]*store.Instance
		if sensor != nil {
			read.LinksOf = sensor.Instance
			var err error
			if then, err = s.sourcesAsOf(ctx, *sensor, opts.AsOf); err != nil {
				return err
			}
		}
		read.LinkReadings = pageLinkReadings * q.Limit
		read.LinksSpacing = s.pageHints.linksSpacing(key.SensorID)
		known := s.pageHints.knownSources(key.SensorID, read.LinksOf)
		if len(known) > 0 {
			read.KnownSources = make(map[int64]int64, len(known))
			for id, inst := range known {
				read.KnownSources[id] = inst.Version
			}
		}
		read.Links = func(p store.LinkedPage) error {
			if linked {
				s.pageHints.sawSources(sensor.ID, p.Links)
				var links []*formulas.Link
				if links, first, last, served = s.pageLinks(*sensor, p, known, then); served {
					o = s.outputsOf(*sensor, links)
				}
			}
			return nil
		}
	}
	err := s.reader.ReadPage(ctx, read, func(looked *store.Sensor, fl []store.Flag) error {
		if looked != nil {
			sensor = looked
			if opts.Outputs {
				s.pageHints.saw(sensor.ID, noLinks, !sensor.Instance.Linked())
			}
		}
		flags = newFlagSet(fl)
		linked = opts.Outputs && sensor.Instance.Linked()
		if opts.Outputs && !linked {
			o = s.outputsOf(*sensor, nil)
		}
		if head == nil {
			return nil
		}
		return head(*sensor, o)
	}, func(r *store.Reading) error {
		if n++; n == 1 {
			start = r.Time
		}
		end = r.Time
		// Once one is held, the rest are, to keep their order.
		if linked && (!served || len(held) > 0 || r.Time.Before(first) || r.Time.After(last)) {
			held = append(held, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
			return nil
		}
		return fn(r, o)
	})
	if err != nil {
		return err
	}
	if read.Links != nil && n == q.Limit {
		s.pageHints.sawPage(sensor.ID, n, end.Sub(start))
	}
	if len(held) == 0 {
		return nil
	}
	at := make([]time.Time, len(held))
	for i := range held {
		at[i] = held[i].Time
	}
	slices.SortFunc(at, time.Time.Compare)
	if o, err = s.outputsAt(ctx, s.reader, *sensor, at, opts.AsOf); err != nil {
		return err
	}
	for i := range held {
		if err := fn(&held[i], o); err != nil {
			return err
		}
	}
	return nil
}

// pageLinkReadings bounds the readings of a link's source read with a
// page, per reading the page may hold: a source up to that many times as
// dense as the page has its readings read with it; a denser one's are
// read after it, keeping only those the page's instants need.
const pageLinkReadings = 4

// Export is a sensor's readings read a chunk at a time, for a response
// that streams them: each chunk is a query of its own, so that no
// connection is held while the client reads.
type Export struct {
	s       *Service
	key     store.SensorKey
	Sensor  store.Sensor
	Outputs *Outputs // nil unless asked for
	// InputIDs are the input ids the sensor can have, ascending, when
	// asked for: a CSV's columns.
	InputIDs []int64
	q        store.ReadingQuery
	opts     ReadOptions
	done     bool
}

// Export prepares the export of the sensor's readings that q selects,
// chunk readings at a time, with their outputs when outputs is set and the
// input ids its readings can have when inputIDs is set, flags and the
// configuration as opts say. It returns NotFound.
func (s *Service) Export(ctx context.Context, key store.SensorKey, q store.ReadingQuery, chunk int, opts ReadOptions, inputIDs bool) (*Export, error) {
	sensor, err := s.sensorAsOf(ctx, key, opts.AsOf)
	if err != nil {
		return nil, err
	}
	q.Limit = chunk
	e := &Export{s: s, key: key, Sensor: sensor, q: q, opts: opts}
	if opts.Outputs {
		e.Outputs = s.outputsOf(sensor, nil)
	}
	if inputIDs {
		if e.InputIDs, err = s.inputIDs(ctx, sensor); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Next gives fn the next chunk's readings, with the outputs to compute
// them with when they were asked for and their flags' marks, and says
// whether more may follow.
func (e *Export) Next(ctx context.Context, fn func(*store.Reading, *Outputs, []Mark) error) (bool, error) {
	if e.done || e.q.From.After(e.q.To) {
		return false, nil
	}
	var (
		n    int
		last time.Time
	)
	err := e.s.listReadings(ctx, e.key, &e.Sensor, e.q, e.opts, nil, func(r *store.Reading, o *Outputs, marks []Mark) error {
		n++
		last = r.Time
		return fn(r, o, marks)
	})
	if err != nil {
		return false, err
	}
	e.done = n < e.q.Limit
	e.q.From = last.Add(time.Microsecond)
	return !e.done, nil
}

// inputIDs is every input id the sensor's readings can have, ascending:
// its instance's, or, without one, those its readings have used.
func (s *Service) inputIDs(ctx context.Context, sensor store.Sensor) ([]int64, error) {
	if sensor.Instance == nil {
		return s.reader.InputIDs(ctx, sensor)
	}
	ids := make([]int64, len(sensor.Instance.Inputs))
	for i, in := range sensor.Instance.Inputs {
		ids[i] = in.ID
	}
	slices.Sort(ids)
	return ids, nil
}

// Latest is a sensor's newest reading, if it has one, and the outputs to
// compute it with, when asked for. It points into the store's answer
// rather than copying it, which for a project's hundred sensors was a
// tenth of the garbage a request left.
type Latest struct {
	*store.Latest
	Outputs *Outputs
}

// LatestOptions say what a read of latest values computes and names.
type LatestOptions struct {
	Outputs bool // each reading's outputs
	// Instances reads each sensor's instance, which naming its values by
	// key needs; Outputs reads them too. Without either, a sensor's
	// Instance is nil.
	Instances bool
}

// LatestReadings returns, for up to limit sensors of the project with ids
// above after, each sensor's newest reading, with its outputs when opts
// ask for them, and whether more sensors follow. It returns NotFound for
// a project not in orgID.
func (s *Service) LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int, opts LatestOptions) ([]Latest, bool, error) {
	latest, more, err := s.reader.LatestReadings(ctx, orgID, projectID, after, limit, opts.Outputs || opts.Instances)
	if err != nil {
		return nil, false, err
	}
	if err := s.unflagLatest(ctx, latest); err != nil {
		return nil, false, err
	}
	out := make([]Latest, len(latest))
	for i := range latest {
		l := &latest[i]
		out[i].Latest = l
		if opts.Outputs && l.Reading != nil {
			if out[i].Outputs, err = s.outputsAt(ctx, s.reader, l.Sensor, []time.Time{l.Reading.Time}, nil); err != nil {
				return nil, false, err
			}
		}
	}
	return out, more, nil
}

// MaxProjectSensors is how many sensors a read of a project's readings
// takes when it names none.
const MaxProjectSensors = 20

// ProjectQuery selects readings of several sensors of a project.
type ProjectQuery struct {
	Sensors  []int64 // by id; nil: every sensor of the project, MaxProjectSensors at most
	From, To time.Time
	Limit    int
	// After is the last reading of the page before, for the next: that
	// sensor's readings after it, then the next sensors'.
	AfterSensor int64
	AfterTime   time.Time
	Outputs     bool
}

// ProjectReadings gives sink the readings q selects, sensor by sensor in
// id order, each sensor before its readings, up to q.Limit in all. When
// the page is full it returns its last reading's sensor and datetime, the
// cursor of the next page; else 0. It returns NotFound for a sensor or
// project that is not there, Invalid for a project of more than
// MaxProjectSensors sensors when q names none, and sink's errors.
func (s *Service) ProjectReadings(ctx context.Context, orgID, projectID int64, q ProjectQuery, sink ReadingSink) (int64, time.Time, error) {
	sensors, err := s.projectSensors(ctx, orgID, projectID, q.Sensors)
	if err != nil {
		return 0, time.Time{}, err
	}
	n := 0
	for _, sensor := range sensors {
		if sensor.ID < q.AfterSensor {
			continue
		}
		rq := store.ReadingQuery{From: q.From, To: q.To, Limit: q.Limit - n}
		if sensor.ID == q.AfterSensor {
			rq.From = later(q.From, q.AfterTime.Add(time.Microsecond))
		}
		if rq.From.After(rq.To) {
			continue
		}
		if err := sink.Sensor(sensor, nil); err != nil {
			return 0, time.Time{}, err
		}
		var last time.Time
		count := 0
		visit := withMarks(sink)
		key := store.SensorKey{OrgID: orgID, ProjectID: projectID, SensorID: sensor.ID}
		err := s.listReadings(ctx, key, &sensor, rq, ReadOptions{Outputs: q.Outputs}, nil, func(r *store.Reading, o *Outputs, marks []Mark) error {
			count++
			last = r.Time
			return visit(r, o, marks)
		})
		if err != nil {
			return 0, time.Time{}, err
		}
		if n += count; n == q.Limit {
			return sensor.ID, last, nil
		}
	}
	return 0, time.Time{}, nil
}

// projectSensors returns the sensors ids names, or without ids every
// sensor of the project, MaxProjectSensors at most.
func (s *Service) projectSensors(ctx context.Context, orgID, projectID int64, ids []int64) ([]store.Sensor, error) {
	if ids == nil {
		sensors, more, err := s.db.ListSensors(ctx, orgID, projectID, 0, MaxProjectSensors)
		if err != nil {
			return nil, err
		}
		if more {
			return nil, apperr.Errorf(apperr.Invalid, "the project has more than %d sensors: name at most %d in sensors", MaxProjectSensors, MaxProjectSensors)
		}
		return sensors, nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sensors := make([]store.Sensor, len(ids))
	for i, id := range ids {
		var err error
		if sensors[i], err = s.db.GetSensor(ctx, store.SensorKey{OrgID: orgID, ProjectID: projectID, SensorID: id}); err != nil {
			return nil, err
		}
	}
	return sensors, nil
}

// Status is a sensor's status, and the outputs to compute its newest
// reading with.
type Status struct {
	store.SensorStatus
	Outputs *Outputs
}

// SensorStatuses returns a page of the status of the sensors q selects,
// each newest reading a flag does not reject whole (without its rejected
// values) with its outputs, and whether more follow. It
// returns store.DB.SensorStatuses' errors.
func (s *Service) SensorStatuses(ctx context.Context, q store.StatusQuery) ([]Status, bool, error) {
	statuses, more, err := s.db.SensorStatuses(ctx, q)
	if err != nil {
		return nil, false, err
	}
	latest := make([]store.Latest, len(statuses))
	for i, st := range statuses {
		latest[i] = store.Latest{Sensor: st.Sensor, Reading: st.Reading}
	}
	if err := s.markFlagged(ctx, latest); err != nil {
		return nil, false, err
	}
	if err := s.unflagLatest(ctx, latest); err != nil {
		return nil, false, err
	}
	for i := range statuses {
		statuses[i].Reading = latest[i].Reading
	}
	out := make([]Status, len(statuses))
	for i, st := range statuses {
		out[i].SensorStatus = st
		if st.Reading != nil {
			if out[i].Outputs, err = s.outputsAt(ctx, s.db, st.Sensor, []time.Time{st.Reading.Time}, nil); err != nil {
				return nil, false, err
			}
		}
	}
	return out, more, nil
}
