package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// testdata/pgbackrest-info.json is what pgBackRest 2.45 printed in a run
// of make backup-drill (a full backup, then an incremental one), with a
// third, failed, incremental backup added: a failed backup is no success.
func TestBackupMetrics(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pgbackrest.prom")
	var stderr bytes.Buffer
	if err := run(t.Context(), []string{"backup-metrics", "-input", "testdata/pgbackrest-info.json", "-output", out}, envOf(nil), new(bytes.Buffer), &stderr); err != nil {
		t.Fatalf("backup-metrics: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("the textfile does not parse: %v", err)
	}
	got := map[string]float64{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got[name+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"readings_backup_status{stanza=drill}":                                   0,
		"readings_backup_last_success_timestamp_seconds{stanza=drill,type=full}": 1795719548,
		"readings_backup_last_success_timestamp_seconds{stanza=drill,type=incr}": 1795719559,
		"readings_backup_last_duration_seconds{stanza=drill,type=full}":          6,
		"readings_backup_last_size_bytes{stanza=drill,type=full}":                43989508,
		"readings_backup_last_delta_bytes{stanza=drill,type=incr}":               21414153,
		"readings_backup_last_repository_bytes{stanza=drill,type=incr}":          3574437,
		"readings_backup_count{stanza=drill,type=full}":                          1,
		"readings_backup_count{stanza=drill,type=incr}":                          2,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present: %v), want %v", key, v, ok, want)
		}
	}
	if v := got["readings_backup_info_timestamp_seconds{stanza=drill}"]; v < 1795719548 {
		t.Errorf("readings_backup_info_timestamp_seconds = %v, want the time of the run", v)
	}
}

// When pgBackRest fails, the command fails and leaves the textfile as it
// was: the figures go stale, which ReadingsBackupFiguresStale notices,
// rather than vanish or lie.
func TestBackupMetricsPgbackrestFails(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pgbackrest.prom")
	if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), []string{"backup-metrics", "-pgbackrest", "false", "-output", out}, envOf(nil), new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "false info") {
		t.Errorf("backup-metrics with a failing pgbackrest = %v, want an error naming it", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "before\n" {
		t.Errorf("the textfile became %q, want it untouched", b)
	}
}
