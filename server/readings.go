package server

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/fileimport"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// Writes store and delete readings.
type Writes interface {
	Ingest(ctx context.Context, key store.SensorKey, src sensing.Source) (store.Written, error)
	ImportFile(ctx context.Context, key store.SensorKey, body io.Reader, o fileimport.Overrides, dryRun bool) (sensing.FileImport, error)
	DeleteReadings(ctx context.Context, key store.SensorKey, from, to time.Time) (int64, error)
}

// Reads read readings with their outputs, from the primary or a standby.
type Reads interface {
	ListReadings(ctx context.Context, key store.SensorKey, q store.ReadingQuery, opts sensing.ReadOptions, sink sensing.ReadingSink) error
	Export(ctx context.Context, key store.SensorKey, q store.ReadingQuery, chunk int, opts sensing.ReadOptions, inputIDs bool) (*sensing.Export, error)
	Aggregate(ctx context.Context, key store.SensorKey, q store.BucketQuery, opts sensing.AggregateOptions, sink sensing.AggregateSink) (store.RollupUse, error)
	LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int, opts sensing.LatestOptions) ([]sensing.Latest, bool, error)
	ProjectReadings(ctx context.Context, orgID, projectID int64, q sensing.ProjectQuery, sink sensing.ReadingSink) (int64, time.Time, error)
}

// The defaults of the readings GET's parameters, as the spec states them.
const defaultReadingsLimit = 1000

// PostReadings stores a batch of readings, all or none. The body was
// checked and decoded while it streamed in (batch.Decode).
func (s *Server) PostReadings(ctx context.Context, req gen.PostReadingsRequestObject) (gen.PostReadingsResponseObject, error) {
	if req.Body != nil {
		return s.postFile(ctx, req)
	}
	if p := req.Params; p.Tz != nil || p.Dst != nil || p.DryRun != nil {
		return nil, apperr.Errorf(apperr.Invalid, "tz, dst and dry_run apply to files (text/csv) only")
	}
	if req.JSONBody == nil || len(req.JSONBody.List) == 0 {
		return nil, apperr.Errorf(apperr.Invalid, "the body must be a non-empty JSON array of readings")
	}
	readings := req.JSONBody.List
	if _, err := s.Writes.Ingest(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), sensing.NewBatch(readings)); err != nil {
		return nil, err
	}
	// Its memory goes to the next batch only after a write that
	// succeeded: after a failed COPY, pgconn may return while its
	// goroutine still encodes the rows (pgconn.CopyFrom).
	req.JSONBody.Release()
	s.metrics.ingested.Add(float64(len(readings)))
	ok := gen.PostReadings200JSONResponse{}
	if err := ok.Body.FromPostReadings200JSONResponseBody0(gen.OK); err != nil {
		return nil, err
	}
	return ok, nil
}

// ListReadings returns a page of a sensor's readings. The page is encoded
// straight from the rows as they arrive, without building a value per
// reading; the Link to the next page is known once the page is full.
func (s *Server) ListReadings(ctx context.Context, req gen.ListReadingsRequestObject) (gen.ListReadingsResponseObject, error) {
	key := sensorKey(req.OrgId, req.ProjId, req.SensorId)
	q, err := readingQuery(req.Params)
	if err != nil {
		return nil, err
	}
	opts, err := readOptions(req.Params.Outputs, req.Params.Flags, req.Params.AsOf)
	if err != nil {
		return nil, err
	}
	page := newReadingsPage(req.SensorId, byName(req.Params.Keys), prefersCSV(ctx))
	page.allFlags = opts.Flags
	if err := s.reads(ctx).ListReadings(ctx, key, q, opts, page); err != nil {
		page.release()
		return nil, err
	}
	next := ""
	if page.count == q.Limit {
		next = nextPageLink(key, req.Params, page.last)
	}
	page.conn = wholeConnOf(ctx)
	return page.finish(next), nil
}

// DeleteReadings deletes a sensor's readings in a range.
func (s *Server) DeleteReadings(ctx context.Context, req gen.DeleteReadingsRequestObject) (gen.DeleteReadingsResponseObject, error) {
	from, to, err := boundedRange(req.Params.DatetimeGte, req.Params.DatetimeLt)
	if err != nil {
		return nil, err
	}
	deleted, err := s.Writes.DeleteReadings(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), from, to.Add(time.Microsecond))
	if err != nil {
		return nil, err
	}
	return gen.DeleteReadings200JSONResponse{Body: gen.Deleted{Deleted: deleted}}, nil
}

// readOptions are the options of a read of readings.
func readOptions(outputs, flags *bool, asOf *gen.AsOf) (sensing.ReadOptions, error) {
	opts := sensing.ReadOptions{Outputs: outputs != nil && *outputs, Flags: flags != nil && *flags}
	if asOf != nil {
		t, err := parseBound(*asOf)
		if err != nil {
			return opts, &apperr.Error{Code: apperr.Invalid, Message: "as_of: " + err.Error(), Details: map[string]any{"parameter": "as_of"}}
		}
		opts.AsOf = &t
	}
	return opts, nil
}

// readingQuery turns the parameters into the store's query.
func readingQuery(p gen.ListReadingsParams) (store.ReadingQuery, error) {
	q := store.ReadingQuery{Limit: defaultReadingsLimit}
	var err error
	if q.From, q.To, err = timeRange(p.DatetimeGte, p.DatetimeGt, p.DatetimeLte, p.DatetimeLt); err != nil {
		return q, err
	}
	if p.Limit != nil {
		q.Limit = *p.Limit
	}
	if p.Offset != nil {
		q.Offset = *p.Offset
	}
	q.Desc = p.Order != nil && *p.Order == gen.Desc
	return q, nil
}

// nextPageLink is the Link header of a full page: the same query from just
// past the last reading, without offset, which applied to the first page.
func nextPageLink(key store.SensorKey, p gen.ListReadingsParams, last time.Time) string {
	exact := datetime.FormatExact(last)
	if p.Order != nil && *p.Order == gen.Desc {
		p.DatetimeLt = &exact
	} else {
		p.DatetimeGt = &exact
	}
	v := url.Values{}
	for name, b := range map[string]*gen.Bound{
		"datetime__gte": p.DatetimeGte, "datetime__gt": p.DatetimeGt,
		"datetime__lte": p.DatetimeLte, "datetime__lt": p.DatetimeLt,
	} {
		if b != nil {
			v.Set(name, *b)
		}
	}
	if p.Limit != nil {
		v.Set("limit", strconv.Itoa(*p.Limit))
	}
	if p.Order != nil {
		v.Set("order", string(*p.Order))
	}
	if p.Outputs != nil {
		v.Set("outputs", strconv.FormatBool(*p.Outputs))
	}
	if p.Keys != nil {
		v.Set("keys", string(*p.Keys))
	}
	if p.Flags != nil {
		v.Set("flags", strconv.FormatBool(*p.Flags))
	}
	if p.AsOf != nil {
		v.Set("as_of", *p.AsOf)
	}
	return fmt.Sprintf(`</api/v1/org/%d/proj/%d/readings/%d?%s>; rel="next"`,
		key.OrgID, key.ProjectID, key.SensorID, v.Encode())
}
