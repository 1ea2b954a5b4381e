// Command widest posts the widest data the service's limits allow, then runs
// its heaviest reads at once, and reports the service's peak memory
// (VmHWM) for each part; it fails when a request fails or the peak passes
// -max-rss. scripts/widest.sh starts the service and runs it (make widest).
//
// The widest data: two sensors with 100 inputs each (-max-inputs, and a
// blueprint's most), every reading with all 100 and 17-digit values near
// 1e292, posted as concurrent bodies just under -max-body. One sensor has
// no blueprint; the other has a blueprint of 100 inputs and 100 outputs, so
// that its reads with outputs=true are 200 columns wide. The heaviest
// reads: full CSV and JSON pages (1,000 readings), fill=null aggregates at
// the 200,000-value limit, and CSV exports of every reading.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

type config struct {
	base, headerFile string
	org, proj        int64
	pid              int
	maxBody          int
	posts, rounds    int
	postsAtOnce      int
	maxRSS           int64
	phase, stateFile string
}

func main() {
	var c config
	flag.StringVar(&c.base, "base", "http://127.0.0.1:8080", "the service's base URL (127.0.0.1 only)")
	flag.StringVar(&c.headerFile, "header-file", "", "a file holding the owner's Authorization header")
	flag.Int64Var(&c.org, "org", 0, "the organization's id")
	flag.Int64Var(&c.proj, "proj", 0, "the project's id")
	flag.IntVar(&c.pid, "pid", 0, "the service's process id, to read its memory from /proc")
	flag.IntVar(&c.maxBody, "max-body", 16<<20, "the service's -max-body")
	flag.IntVar(&c.posts, "posts", 4, "POSTs of a full body per sensor")
	flag.IntVar(&c.postsAtOnce, "posts-at-once", 4, "POSTs sent at once")
	flag.IntVar(&c.rounds, "rounds", 4, "copies of each heavy read run at once")
	flag.StringVar(&c.phase, "phase", "ingest", "ingest: create the sensors and post; read: run the reads on what ingest posted; file: post a CSV file of the largest body, short lines, to the sensor without a blueprint")
	flag.StringVar(&c.stateFile, "state", "widest.json", "where ingest leaves the sensors' ids for read")
	flag.Int64Var(&c.maxRSS, "max-rss", 256<<20, "the peak RSS, in bytes, above which the run fails")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "widest:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if !strings.HasPrefix(c.base, "http://127.0.0.1:") {
		return fmt.Errorf("base %q: only 127.0.0.1 is allowed", c.base)
	}
	header, err := os.ReadFile(c.headerFile)
	if err != nil {
		return err
	}
	auth := strings.TrimSpace(strings.TrimPrefix(string(header), "Authorization:"))
	w := &widest{cfg: c, auth: auth, http: &http.Client{Timeout: 5 * time.Minute}}
	w.api, err = client.NewClientWithResponses(c.base, client.WithHTTPClient(w.http),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", auth)
			return nil
		}))
	if err != nil {
		return err
	}
	startPeak, err := w.peak()
	if err != nil {
		return err
	}
	start := time.Now()
	var phase string
	switch c.phase {
	case "ingest":
		plain, wide, err := w.sensors(ctx)
		if err != nil {
			return err
		}
		readings, err := w.postAll(ctx, []sensor{plain, wide})
		if err != nil {
			return err
		}
		st, err := json.Marshal(state{Sensors: []sensor{plain, wide}, PerSensor: readings / 2})
		if err == nil {
			err = os.WriteFile(c.stateFile, st, 0o600)
		}
		if err != nil {
			return err
		}
		phase = fmt.Sprintf("ingest: %d POSTs, %d at once, of %d readings x 100 inputs (%s bodies)",
			2*c.posts, c.postsAtOnce, readings/(2*c.posts), mib(int64(w.bodySize)))
	case "read":
		st, err := loadState(c.stateFile)
		if err != nil {
			return err
		}
		n, bytesRead, err := w.readAll(ctx, st.Sensors, st.PerSensor)
		if err != nil {
			return err
		}
		phase = fmt.Sprintf("reads: %d heavy reads started at once, %d waits for an export slot (%s of answers)", n, w.retries.Load(), mib(bytesRead))
	case "file":
		st, err := loadState(c.stateFile)
		if err != nil {
			return err
		}
		lines, size, err := w.postFile(ctx, st.Sensors[0])
		if err != nil {
			return err
		}
		phase = fmt.Sprintf("file: one CSV of %d readings (%s body)", lines, mib(int64(size)))
	default:
		return fmt.Errorf("phase %q is not ingest, read or file", c.phase)
	}
	peak, err := w.peak()
	if err != nil {
		return err
	}
	fmt.Printf("%s in %v: peak RSS %s (%s at start)\n", phase, time.Since(start).Round(time.Millisecond), mib(peak), mib(startPeak))
	if peak > c.maxRSS {
		return fmt.Errorf("peak RSS %s is above %s", mib(peak), mib(c.maxRSS))
	}
	return nil
}

// state is what the ingest phase leaves for the read phase.
type state struct {
	Sensors   []sensor
	PerSensor int
}

// loadState reads the state the ingest phase left for the later ones.
func loadState(path string) (state, error) {
	var st state
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	return st, err
}

type widest struct {
	cfg      config
	auth     string
	http     *http.Client
	api      *client.ClientWithResponses
	bodySize int
	retries  atomic.Int64 // 429s waited out
}

// sensor is a sensor and the ids its readings use.
type sensor struct {
	ID      int64
	Inputs  []int64
	Outputs bool
}

// sensors creates a sensor without a blueprint, using ids 1 to 100, and
// one with a blueprint of 100 inputs and 100 outputs.
func (w *widest) sensors(ctx context.Context) (sensor, sensor, error) {
	plainRes, err := w.api.CreateSensorWithResponse(ctx, w.cfg.org, w.cfg.proj, client.SensorCreate{Name: "widest, no blueprint"})
	if err != nil {
		return sensor{}, sensor{}, err
	}
	if plainRes.JSON201 == nil {
		return sensor{}, sensor{}, fmt.Errorf("create sensor: %d %s", plainRes.StatusCode(), plainRes.Body)
	}
	plain := sensor{ID: plainRes.JSON201.Id}
	for id := int64(1); id <= 100; id++ {
		plain.Inputs = append(plain.Inputs, id)
	}
	bp := client.BlueprintWrite{Name: "widest"}
	for k := range 100 {
		bp.Inputs = append(bp.Inputs, client.BlueprintInput{Key: fmt.Sprintf("in%d", k), Name: fmt.Sprintf("Input %d", k)})
		bp.Outputs = append(bp.Outputs, client.BlueprintOutput{Key: fmt.Sprintf("out%d", k), Name: fmt.Sprintf("Output %d", k),
			Formula: fmt.Sprintf("in%d / 3 + in%d", k, (k+1)%100)})
	}
	bpRes, err := w.api.CreateBlueprintWithResponse(ctx, w.cfg.org, bp)
	if err != nil {
		return sensor{}, sensor{}, err
	}
	if bpRes.JSON201 == nil {
		return sensor{}, sensor{}, fmt.Errorf("create blueprint: %d %s", bpRes.StatusCode(), bpRes.Body)
	}
	wideRes, err := w.api.CreateSensorWithResponse(ctx, w.cfg.org, w.cfg.proj, client.SensorCreate{Name: "widest, blueprint", BlueprintId: &bpRes.JSON201.Id})
	if err != nil {
		return sensor{}, sensor{}, err
	}
	if wideRes.JSON201 == nil {
		return sensor{}, sensor{}, fmt.Errorf("create sensor: %d %s", wideRes.StatusCode(), wideRes.Body)
	}
	wide := sensor{ID: wideRes.JSON201.Id, Outputs: true}
	for _, in := range wideRes.JSON201.Inputs {
		wide.Inputs = append(wide.Inputs, in.Id)
	}
	return plain, wide, nil
}

var start = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// appendReading appends reading i of s: 100 inputs of 17 significant
// digits near 1e292, alternately signed.
func appendReading(b []byte, s sensor, i int) []byte {
	b = append(b, `{"datetime":"`...)
	b = start.Add(time.Duration(i)*time.Second).AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","inputs":{`...)
	for k, id := range s.Inputs {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `":`...)
		v := (1 + float64(i%1000)/7 + float64(k)/13) * 1e292
		if (i+k)%2 == 1 {
			v = -v
		}
		b = strconv.AppendFloat(b, v, 'e', 16, 64)
	}
	return append(b, `}}`...)
}

// postAll posts, per sensor, cfg.posts bodies, cfg.postsAtOnce at once,
// each as many readings as fit in -max-body, and returns how many readings
// went in.
func (w *widest) postAll(ctx context.Context, sensors []sensor) (int, error) {
	perBody := (w.cfg.maxBody - 2) / (len(appendReading(nil, sensors[0], 0)) + 1) * 99 / 100
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, w.cfg.postsAtOnce)
	)
	for p := range w.cfg.posts {
		for _, s := range sensors {
			b := []byte{'['}
			for i := p * perBody; i < (p+1)*perBody; i++ {
				if i > p*perBody {
					b = append(b, ',')
				}
				b = appendReading(b, s, i)
			}
			b = append(b, ']')
			w.bodySize = len(b)
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				err := w.request(ctx, "POST", w.path(s, "", ""), "", "application/json", b, func(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) })
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return len(sensors) * w.cfg.posts * perBody, errors.Join(errs...)
}

// postFile posts to s a CSV file of the largest body, of the shortest
// lines (one input), so of the most readings a file can bring, dated
// before the readings ingest posted, and checks they are all new.
func (w *widest) postFile(ctx context.Context, s sensor) (int, int, error) {
	b := []byte("datetime,1\n")
	lines := 0
	at := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for line := make([]byte, 0, 64); ; lines++ {
		line = at.Add(time.Duration(lines)*time.Second).AppendFormat(line[:0], time.RFC3339)
		line = append(line, ",1\n"...)
		if len(b)+len(line) > w.cfg.maxBody {
			break
		}
		b = append(b, line...)
	}
	var answer client.FileImport
	err := w.request(ctx, "POST", w.path(s, "", ""), "", "text/csv", b, func(r io.Reader) (int64, error) {
		return 0, json.NewDecoder(r).Decode(&answer)
	})
	if err == nil && (answer.New != int64(lines) || answer.Readings != int64(lines)) {
		err = fmt.Errorf("file: %d new of %d readings, want %d of %d", answer.New, answer.Readings, lines, lines)
	}
	return lines, len(b), err
}

func (w *widest) path(s sensor, suffix, query string) string {
	return fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d%s?%s", w.cfg.org, w.cfg.proj, s.ID, suffix, query)
}

// readAll starts cfg.rounds copies of every heavy read of every sensor at
// once; the exports beyond the service's caps wait their turn. Each must
// answer 200 with the lines or buckets it should have.
func (w *widest) readAll(ctx context.Context, sensors []sensor, perSensor int) (int, int64, error) {
	type read struct {
		path, accept string
		lines        int // of the answer: CSV rows, or, for JSON, buckets or readings
	}
	var reads []read
	for _, s := range sensors {
		outputs, series := "", 100
		if s.Outputs {
			outputs, series = "&outputs=true", 200
		}
		// fill=null lists every series in every bucket: as many buckets as
		// the limit allows for the default three fns.
		buckets := 200_000 / 3 / series
		reads = append(reads,
			read{w.path(s, "", "limit=1000"+outputs), "text/csv", 1001},
			read{w.path(s, "", "limit=1000&order=desc"+outputs), "", 1000},
			read{w.path(s, "/aggregates", fmt.Sprintf("interval=1m&fill=null&datetime__gte=%s&datetime__lt=%s%s",
				start.Format(time.RFC3339), start.Add(time.Duration(buckets)*time.Minute).Format(time.RFC3339), outputs)), "", buckets},
			read{w.path(s, "/export", "format=csv"+outputs), "", perSensor + 1},
		)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		total int64
	)
	for range w.cfg.rounds {
		for _, r := range reads {
			wg.Go(func() {
				var n int64
				err := w.request(ctx, "GET", r.path, r.accept, "", nil, func(body io.Reader) (int64, error) {
					lines, size, err := countLines(body, r.accept == "" && !strings.Contains(r.path, "/export"))
					n = size
					if err == nil && lines != r.lines {
						err = fmt.Errorf("%d lines or elements, want %d", lines, r.lines)
					}
					return size, err
				})
				mu.Lock()
				defer mu.Unlock()
				total += n
				if err != nil {
					errs = append(errs, fmt.Errorf("GET %s: %w", r.path, err))
				}
			})
		}
	}
	wg.Wait()
	return w.cfg.rounds * len(reads), total, errors.Join(errs...)
}

// countLines counts an answer's lines, as it streams, or, for a JSON
// array, its elements.
func countLines(r io.Reader, jsonArray bool) (int, int64, error) {
	if jsonArray {
		b, err := io.ReadAll(r)
		var elements []json.RawMessage
		if err == nil {
			err = json.Unmarshal(b, &elements)
		}
		return len(elements), int64(len(b)), err
	}
	var (
		lines int
		size  int64
		buf   = make([]byte, 1<<16)
	)
	for {
		k, err := r.Read(buf)
		size += int64(k)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return lines, size, nil
		}
		if err != nil {
			return lines, size, err
		}
	}
}
