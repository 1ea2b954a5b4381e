package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

const backupMetricsUsage = `usage: readings backup-metrics [-input FILE] [-output FILE] [-stanza NAME] [-config FILE] [-pgbackrest PATH]

Reads pgBackRest's info (runs pgbackrest --output=json info, or reads
what it printed from -input, - for stdin) and writes the backups' metrics
in Prometheus's text format to -output (- for stdout): a file that
node_exporter's textfile collector serves, written whole or not at all.
Run it on the backup host after each backup and every few minutes
(docs/deployment.md); the service itself never runs pgBackRest.`

// pgbackrestInfo is what this command reads of pgbackrest --output=json
// info: per stanza, its status and its backups, oldest first.
type pgbackrestInfo []struct {
	Name   string `json:"name"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
	Backup []struct {
		Type      string `json:"type"`
		Error     bool   `json:"error"`
		Timestamp struct {
			Start int64 `json:"start"`
			Stop  int64 `json:"stop"`
		} `json:"timestamp"`
		Info struct {
			Size       int64 `json:"size"`
			Delta      int64 `json:"delta"`
			Repository struct {
				Size  int64 `json:"size"`
				Delta int64 `json:"delta"`
			} `json:"repository"`
		} `json:"info"`
	} `json:"backup"`
}

func backupMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("readings backup-metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, backupMetricsUsage); fs.PrintDefaults() }
	input := fs.String("input", "", "`file` holding pgbackrest --output=json info, - for stdin; empty runs pgbackrest")
	output := fs.String("output", "-", "`file` to write the metrics to, - for stdout")
	stanza := fs.String("stanza", "", "the stanza to report; empty for all")
	config := fs.String("config", "", "pgBackRest's configuration `file`; empty for its default")
	pgbackrest := fs.String("pgbackrest", "pgbackrest", "the pgbackrest `command`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var raw []byte
	var err error
	switch *input {
	case "":
		raw, err = runPgbackrestInfo(ctx, *pgbackrest, *config, *stanza)
	case "-":
		raw, err = io.ReadAll(os.Stdin)
	default:
		raw, err = os.ReadFile(*input)
	}
	if err != nil {
		return fmt.Errorf("backup metrics: %w", err)
	}
	var info pgbackrestInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return fmt.Errorf("backup metrics: pgBackRest's info is not the JSON of --output=json: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(backupCollector{info: info, now: time.Now()})
	if *output == "-" {
		families, err := reg.Gather()
		if err != nil {
			return err
		}
		enc := expfmt.NewEncoder(stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range families {
			if err := enc.Encode(f); err != nil {
				return err
			}
		}
		return nil
	}
	// Written to a temporary file and renamed, so that the collector never
	// serves half of it.
	return prometheus.WriteToTextfile(*output, reg)
}

// runPgbackrestInfo runs pgbackrest info once, bounded.
func runPgbackrestInfo(ctx context.Context, command, config, stanza string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	args := []string{"--output=json"}
	if config != "" {
		args = append(args, "--config="+config)
	}
	if stanza != "" {
		args = append(args, "--stanza="+stanza)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, command, append(args, "info")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s info: %w: %s", command, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

var (
	backupLabels   = []string{"stanza", "type"}
	backupStatus   = prometheus.NewDesc("readings_backup_status", "pgBackRest's status code of the stanza: 0 is ok; 1 missing stanza path, 2 no valid backups, 3 missing stanza data, 4 different cipher, 5 database mismatch, 6 backup/expire running, 99 other.", []string{"stanza"}, nil)
	backupInfoTime = prometheus.NewDesc("readings_backup_info_timestamp_seconds", "When pgBackRest's info was read, as a Unix time: a stale value means the command stopped running.", []string{"stanza"}, nil)
	backupSuccess  = prometheus.NewDesc("readings_backup_last_success_timestamp_seconds", "When the newest backup of the type that completed without error finished, as a Unix time.", backupLabels, nil)
	backupDuration = prometheus.NewDesc("readings_backup_last_duration_seconds", "How long the newest successful backup of the type took.", backupLabels, nil)
	backupSize     = prometheus.NewDesc("readings_backup_last_size_bytes", "The database's size at the newest successful backup of the type.", backupLabels, nil)
	backupDelta    = prometheus.NewDesc("readings_backup_last_delta_bytes", "What the newest successful backup of the type copied: all of it for a full backup, the changes for the others.", backupLabels, nil)
	backupRepo     = prometheus.NewDesc("readings_backup_last_repository_bytes", "What the newest successful backup of the type added to the repository, compressed.", backupLabels, nil)
	backupCount    = prometheus.NewDesc("readings_backup_count", "Backups of the type in the repository.", backupLabels, nil)
)

// backupCollector turns pgBackRest's info into metrics.
type backupCollector struct {
	info pgbackrestInfo
	now  time.Time
}

func (backupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backupStatus, backupInfoTime, backupSuccess, backupDuration, backupSize, backupDelta, backupRepo, backupCount} {
		ch <- d
	}
}

func (c backupCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, st := range c.info {
		gauge(backupStatus, float64(st.Status.Code), st.Name)
		gauge(backupInfoTime, float64(c.now.Unix()), st.Name)
		count := map[string]int{}
		newest := map[string]int{} // type → index of its newest good backup
		for i, b := range st.Backup {
			count[b.Type]++
			if !b.Error {
				if j, ok := newest[b.Type]; !ok || b.Timestamp.Stop >= st.Backup[j].Timestamp.Stop {
					newest[b.Type] = i
				}
			}
		}
		for typ, n := range count {
			gauge(backupCount, float64(n), st.Name, typ)
		}
		for typ, i := range newest {
			b := st.Backup[i]
			gauge(backupSuccess, float64(b.Timestamp.Stop), st.Name, typ)
			gauge(backupDuration, float64(b.Timestamp.Stop-b.Timestamp.Start), st.Name, typ)
			gauge(backupSize, float64(b.Info.Size), st.Name, typ)
			gauge(backupDelta, float64(b.Info.Delta), st.Name, typ)
			gauge(backupRepo, float64(b.Info.Repository.Delta), st.Name, typ)
		}
	}
}
