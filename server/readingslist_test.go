package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

func TestReadingsLimitBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	batch := make([]client.ReadingInput, 1001)
	base := at(t, "2024-05-01T00:00:00Z")
	for i := range batch {
		batch[i] = client.ReadingInput{Datetime: base.Add(time.Duration(i) * time.Second), Inputs: client.Values{"1": float64(i)}}
	}
	post(t, c, tn, batch...)

	for _, tc := range []struct {
		limit  *int
		status int
		count  int
	}{
		{nil, 200, 1000},
		{ptr(1), 200, 1},
		{ptr(1000), 200, 1000},
		{ptr(0), 400, 0},
		{ptr(-1), 400, 0},
		{ptr(1001), 400, 0},
	} {
		t.Run(fmt.Sprint(deref(tc.limit)), func(t *testing.T) {
			res, err := c.ListReadingsWithResponse(context.Background(), tn.orgID, tn.projectID, tn.sensorID, &client.ListReadingsParams{Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if tc.status != 200 {
				got := wantError(t, res.StatusCode(), res.Body, tc.status, "invalid")
				if !strings.Contains(got.Message, "1 to 1000") {
					t.Errorf("message %q should say the allowed range, 1 to 1000", got.Message)
				}
				return
			}
			if res.StatusCode() != 200 || len(*res.JSON200) != tc.count {
				t.Fatalf("status %d with %d readings, want 200 with %d", res.StatusCode(), len(deref(res.JSON200)), tc.count)
			}
		})
	}
	res, body := e.do(tn.tokens[store.Viewer], "GET", readingsPath(tn)+"?limit=ten", "", nil)
	wantError(t, res.StatusCode, body, 400, "invalid")
}

func TestReadingsFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	// Readings at 10:00, 11:00, …, 15:00, plus one a microsecond past 12:00.
	var batch []client.ReadingInput
	for h := 10; h <= 15; h++ {
		batch = append(batch, reading(t, fmt.Sprintf("2024-05-01T%02d:00:00Z", h), client.Values{"1": float64(h)}))
	}
	batch = append(batch, reading(t, "2024-05-01T12:00:00.000001Z", client.Values{"1": 12.5}))
	post(t, c, tn, batch...)

	tm := func(s string) *client.Bound { return &s }
	for _, tc := range []struct {
		name string
		p    client.ListReadingsParams
		want []float64
	}{
		{"None", client.ListReadingsParams{}, []float64{10, 11, 12, 12.5, 13, 14, 15}},
		{"Gte", client.ListReadingsParams{DatetimeGte: tm("2024-05-01T12:00:00Z")}, []float64{12, 12.5, 13, 14, 15}},
		{"Gt", client.ListReadingsParams{DatetimeGt: tm("2024-05-01T12:00:00Z")}, []float64{12.5, 13, 14, 15}},
		{"Lte", client.ListReadingsParams{DatetimeLte: tm("2024-05-01T12:00:00Z")}, []float64{10, 11, 12}},
		{"Lt", client.ListReadingsParams{DatetimeLt: tm("2024-05-01T12:00:00.000001Z")}, []float64{10, 11, 12}},
		{"GteLt", client.ListReadingsParams{DatetimeGte: tm("2024-05-01T11:00:00Z"), DatetimeLt: tm("2024-05-01T13:00:00Z")}, []float64{11, 12, 12.5}},
		{"GtLte", client.ListReadingsParams{DatetimeGt: tm("2024-05-01T11:00:00Z"), DatetimeLte: tm("2024-05-01T13:00:00Z")}, []float64{12, 12.5, 13}},
		{"AllFour", client.ListReadingsParams{DatetimeGte: tm("2024-05-01T10:30:00Z"), DatetimeGt: tm("2024-05-01T11:00:00Z"), DatetimeLte: tm("2024-05-01T14:00:00Z"), DatetimeLt: tm("2024-05-01T14:00:00Z")}, []float64{12, 12.5, 13}},
		{"GteMillis", client.ListReadingsParams{DatetimeGte: tm("1714564800000")}, []float64{12, 12.5, 13, 14, 15}},
		{"GtLtMillis", client.ListReadingsParams{DatetimeGt: tm("1714561200000"), DatetimeLt: tm("1714568400000")}, []float64{12, 12.5}},
		{"Offset", client.ListReadingsParams{DatetimeGte: tm("2024-05-01T13:00:00+02:00")}, []float64{11, 12, 12.5, 13, 14, 15}},
		{"Empty", client.ListReadingsParams{DatetimeGt: tm("2024-05-01T14:00:00Z"), DatetimeLt: tm("2024-05-01T15:00:00Z")}, nil},
		{"Crossed", client.ListReadingsParams{DatetimeGte: tm("2024-05-01T15:00:00Z"), DatetimeLte: tm("2024-05-01T10:00:00Z")}, nil},
		{"Desc", client.ListReadingsParams{Order: ptr(client.Desc)}, []float64{15, 14, 13, 12.5, 12, 11, 10}},
		{"Latest", client.ListReadingsParams{Order: ptr(client.Desc), Limit: ptr(1)}, []float64{15}},
		{"DescLt", client.ListReadingsParams{Order: ptr(client.Desc), DatetimeLt: tm("2024-05-01T12:00:00.000001Z"), Limit: ptr(2)}, []float64{12, 11}},
		{"AscOffset", client.ListReadingsParams{Offset: ptr(int64(2)), Limit: ptr(2)}, []float64{12, 12.5}},
		{"DescOffset", client.ListReadingsParams{Order: ptr(client.Desc), Offset: ptr(int64(5))}, []float64{11, 10}},
		{"OffsetPastEnd", client.ListReadingsParams{Offset: ptr(int64(100))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := list(t, c, tn, tc.p)
			var values []float64
			for _, r := range got {
				values = append(values, r.Inputs["1"])
			}
			if fmt.Sprint(values) != fmt.Sprint(tc.want) {
				t.Errorf("readings %v, want %v", values, tc.want)
			}
		})
	}

	for _, query := range []string{
		"datetime__gte=yesterday",
		"datetime__gt=2024-05-01",
		"datetime__lte=2024-05-01T12:00:00",
		"datetime__lt=2024-13-01T00:00:00Z",
		"order=sideways",
		"offset=-1",
		"offset=1.5",
		"outputs=maybe",
	} {
		t.Run(query, func(t *testing.T) {
			res, body := e.do(tn.tokens[store.Viewer], "GET", readingsPath(tn)+"?"+query, "", nil)
			wantError(t, res.StatusCode, body, 400, "invalid")
		})
	}
}

// TestReadingsLinkPaging follows rel="next" through 2,500 readings, some a
// microsecond apart (the same millisecond on the wire), in both orders.
func TestReadingsLinkPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	const total = 2500
	base := at(t, "2024-01-01T00:00:00Z")
	batch := make([]client.ReadingInput, total)
	for i := range batch {
		// Pairs of readings one microsecond apart.
		offset := time.Duration(i/2)*time.Second + time.Duration(i%2)*time.Microsecond
		batch[i] = client.ReadingInput{Datetime: base.Add(offset), Inputs: client.Values{"1": float64(i)}}
	}
	post(t, c, tn, batch...)

	for _, tc := range []struct {
		name  string
		first client.ListReadingsParams
		want  func(i int) float64 // the value of the i-th reading returned
		count int
	}{
		{"Asc", client.ListReadingsParams{Limit: ptr(999)}, func(i int) float64 { return float64(i) }, total},
		{"Desc", client.ListReadingsParams{Order: ptr(client.Desc), Limit: ptr(1000)}, func(i int) float64 { return float64(total - 1 - i) }, total},
		{"Bounded", client.ListReadingsParams{
			DatetimeGte: ptr(fmt.Sprint(base.Add(100 * time.Second).UnixMilli())), DatetimeLt: ptr(base.Add(1100 * time.Second).Format(time.RFC3339)), Limit: ptr(300), Outputs: ptr(false),
			Keys: ptr(client.ListReadingsParamsKeysNames),
		}, func(i int) float64 { return float64(200 + i) }, 2000},
		{"Offset", client.ListReadingsParams{Offset: ptr(int64(10)), Limit: ptr(1000)}, func(i int) float64 { return float64(10 + i) }, total - 10},
		{"FlagsAsOf", client.ListReadingsParams{Flags: ptr(true), AsOf: ptr(time.Now().UTC().Format(time.RFC3339)), Limit: ptr(1000)},
			func(i int) float64 { return float64(i) }, total},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, pages, seen := &tc.first, 0, 0
			for {
				got, header := list(t, c, tn, *p)
				pages++
				for _, r := range got {
					if want := tc.want(seen); r.Inputs["1"] != want {
						t.Fatalf("page %d: reading %d has value %v, want %v", pages, seen, r.Inputs["1"], want)
					}
					seen++
				}
				next, ok := linkParams(t, header)
				if !ok {
					break
				}
				if next.Outputs == nil != (tc.first.Outputs == nil) || next.DatetimeGte == nil != (tc.first.DatetimeGte == nil) ||
					next.Keys == nil != (tc.first.Keys == nil) || next.Flags == nil != (tc.first.Flags == nil) || next.AsOf == nil != (tc.first.AsOf == nil) {
					t.Errorf("Link %q dropped a parameter of the first request", header.Get("Link"))
				}
				p = next
			}
			if seen != tc.count {
				t.Errorf("followed %d pages to %d readings, want %d", pages, seen, tc.count)
			}
		})
	}
}

// TestReadingsPageLength checks that a page is sent with its length, as
// JSON and as CSV, rather than chunked: the client then has the whole
// answer once its last byte arrives, without waiting for the chunked
// body's end, which the server writes only after its middleware returns.
// Compressed, the length is the compressed body's, so it is left out.
func TestReadingsPageLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	batch := make([]client.ReadingInput, 1200)
	base := at(t, "2024-05-01T00:00:00Z")
	for i := range batch {
		batch[i] = client.ReadingInput{Datetime: base.Add(time.Duration(i) * time.Second), Inputs: client.Values{"1": float64(i) / 3, "2": -float64(i)}}
	}
	post(t, c, tn, batch...)

	for _, tc := range []struct {
		name, accept, encoding string
		chunked                bool
	}{
		{"JSON", "application/json", "identity", false},
		{"CSV", "text/csv", "identity", false},
		{"Gzip", "application/json", "gzip", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, e.url+readingsPath(tn)+"?limit=1000", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
			req.Header.Set("Accept", tc.accept)
			// Set outright, so that the transport neither asks for gzip
			// nor unzips behind the test's back.
			req.Header.Set("Accept-Encoding", tc.encoding)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK || res.Header.Get("Link") == "" {
				t.Fatalf("status %d, Link %q; want 200 with a Link", res.StatusCode, res.Header.Get("Link"))
			}
			if got, want := res.Header.Get("Content-Encoding") == "gzip", tc.encoding == "gzip"; got != want {
				t.Fatalf("Content-Encoding %q, want gzip: %v", res.Header.Get("Content-Encoding"), want)
			}
			if tc.chunked {
				if res.ContentLength != -1 {
					t.Errorf("Content-Length %d of a compressed body, want none", res.ContentLength)
				}
				return
			}
			if got, want := res.ContentLength, int64(len(body)); got != want {
				t.Errorf("Content-Length %d, want the body's %d bytes (Transfer-Encoding %q)", got, want, res.TransferEncoding)
			}
		})
	}
}
