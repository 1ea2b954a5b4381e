package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

// importLines is the data lines of the TOA5 file of rows 3f and 4f.
const importLines = 100_000

// importStart is the file's first instant: before the data set's, so that
// the file's readings are its own.
var importStart = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

// serviceImport is rows 3f and 4f: a logger's TOA5 file of 100,000 lines,
// each with the data set's ten inputs, POSTed to a sensor of its own as one
// request, then again, every line replacing a stored reading. The file is
// encoded before the clock starts.
func (e *env) serviceImport(ctx context.Context, res *results) error {
	s := e.svc
	sensor, err := s.api.CreateSensorWithResponse(ctx, s.org, s.project, client.SensorCreate{Name: "bench logger"})
	if err != nil {
		return fmt.Errorf("create sensor: %w", err)
	}
	if sensor.JSON201 == nil {
		return fmt.Errorf("create sensor: %s", sensor.Body)
	}
	url := fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", s.base, s.org, s.project, sensor.JSON201.Id)
	file := e.toa5File()
	for _, pass := range []struct {
		id, what         string
		wantNew, replace int
		compare          float64
		with             string
	}{
		{"3f", "new readings", importLines, 0, res.serviceIngest, "(3)"},
		{"4f", "the same file again, every line replacing a stored reading", 0, importLines, res.serviceOverwrite, "(4)"},
	} {
		stop := e.clock()
		answer, err := s.postFile(ctx, url, file)
		elapsed := stop()
		if err != nil {
			return err
		}
		if answer.New != int64(pass.wantNew) || answer.Replaced != int64(pass.replace) {
			return fmt.Errorf("file import: %d new and %d replaced, want %d and %d", answer.New, answer.Replaced, pass.wantNew, pass.replace)
		}
		r := rate(importLines, elapsed)
		var cpu cpuSpent
		cpu.add(e.timed[len(e.timed)-2:])
		e.log.Info("service import", "row", pass.id, "readings/s", int(r))
		res.add(pass.id, fmt.Sprintf("Service import of a TOA5 file, %s lines of %d inputs (%s) in one POST: %s",
			count(importLines), inputsPerReading, mib(int64(len(file))), pass.what), perSecond(r)+cpu.perReading(importLines),
			ratio(r/pass.compare, pass.with))
	}
	return nil
}

// toa5File is the file of rows 3f and 4f, as a CR1000X writes it.
func (e *env) toa5File() []byte {
	var b bytes.Buffer
	b.WriteString(`"TOA5","bench","CR1000X","1","CR1000X.Std.05","CPU:bench.CR1X","1","Table10"` + "\n")
	b.WriteString(`"TIMESTAMP","RECORD"`)
	for _, id := range e.data.inputIDs {
		fmt.Fprintf(&b, `,"%d"`, id)
	}
	b.WriteString("\n" + `"TS","RN"` + strings.Repeat(`,""`, inputsPerReading) + "\n" + `"",""` + strings.Repeat(`,"Smp"`, inputsPerReading) + "\n")
	line := make([]byte, 0, 256)
	for i := range importLines {
		r := e.data.reading(0, i)
		line = append(line[:0], '"')
		line = importStart.Add(time.Duration(i)*time.Second).AppendFormat(line, "2006-01-02 15:04:05")
		line = append(line, `",`...)
		line = strconv.AppendInt(line, int64(i), 10)
		for _, v := range r.Values {
			line = append(line, ',')
			line = strconv.AppendFloat(line, v, 'f', 4, 64)
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// postFile posts a file to a readings URL and returns the service's count.
func (s *service) postFile(ctx context.Context, url string, file []byte) (client.FileImport, error) {
	var answer client.FileImport
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(file))
	if err != nil {
		return answer, err
	}
	req.Header.Set("Content-Type", "text/csv")
	var body bytes.Buffer
	if err := s.do(req, &body); err != nil {
		return answer, err
	}
	if err := json.Unmarshal(body.Bytes(), &answer); err != nil {
		return answer, fmt.Errorf("file import: %w: %s", err, body.Bytes())
	}
	return answer, nil
}
