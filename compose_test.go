package main

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/sensorreadings/readings/store/storetest"
)

// loadCompose loads docker-compose.yml as Docker Compose does (schema
// validation, interpolation, merging) with env as the whole environment.
func loadCompose(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"docker-compose.yml"},
		cli.WithWorkingDirectory("."), cli.WithEnv(env), cli.WithInterpolation(true))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

const testPassword = "not-a-real-secret-0123456789abcdef"

// TestComposeFile checks docker-compose.yml, which no test here can run
// (no Docker engine), against what docs/deployment.md says of it.
func TestComposeFile(t *testing.T) {
	p, err := loadCompose(t, "POSTGRES_PASSWORD="+testPassword)
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	if got, want := slices.Sorted(slices.Values(p.ServiceNames())), []string{"db", "haproxy", "readings", "standby"}; !slices.Equal(got, want) {
		t.Fatalf("services = %v, want %v", got, want)
	}
	db, standby, readings, haproxy := p.Services["db"], p.Services["standby"], p.Services["readings"], p.Services["haproxy"]

	t.Run("TheImageCITests", func(t *testing.T) {
		dockerfile, err := os.ReadFile("deploy/db/Dockerfile")
		if err != nil {
			t.Fatal(err)
		}
		from := regexp.MustCompile(`(?m)^FROM (\S+)`).FindSubmatch(dockerfile)
		if from == nil || string(from[1]) != storetest.TimescaleImage {
			t.Errorf("deploy/db/Dockerfile builds FROM %q, want %q, the image the tests run against", from, storetest.TimescaleImage)
		}
		for _, s := range []types.ServiceConfig{db, standby} {
			if s.Build == nil || s.Build.Context == "" || !strings.HasSuffix(s.Build.Context, "deploy/db") {
				t.Errorf("%s is not built from deploy/db: %+v", s.Name, s.Build)
			}
			if s.Image != db.Image {
				t.Errorf("%s runs %q, want db's %q", s.Name, s.Image, db.Image)
			}
		}
		if tag := strings.TrimPrefix(storetest.TimescaleImage, "timescale/timescaledb:"); !strings.HasSuffix(db.Image, ":"+tag) {
			t.Errorf("db's image is tagged %q, want the tag of %s", db.Image, storetest.TimescaleImage)
		}
		if readings.Build == nil {
			t.Error("readings is not built from this repository")
		}
	})

	t.Run("NoSecretInTheFile", func(t *testing.T) {
		raw, err := os.ReadFile("docker-compose.yml")
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`(?m)^\s*(POSTGRES_PASSWORD|PGPASSWORD):\s*[^*\s]`).Find(raw); m != nil {
			t.Errorf("docker-compose.yml holds a password: %q", m)
		}
		if _, err := loadCompose(t); err == nil || !strings.Contains(err.Error(), "POSTGRES_PASSWORD") {
			t.Errorf("loading without POSTGRES_PASSWORD = %v, want an error naming it", err)
		}
		for _, s := range []types.ServiceConfig{db, standby, readings} {
			found := false
			for key, v := range s.Environment {
				if v != nil && *v == testPassword {
					found = true
					if key != "POSTGRES_PASSWORD" && key != "PGPASSWORD" {
						t.Errorf("%s passes the password as %s", s.Name, key)
					}
				}
			}
			if !found {
				t.Errorf("%s does not get the password from the environment", s.Name)
			}
		}
		for _, key := range []string{"DATABASE_URL", "READ_DATABASE_URL"} {
			v := readings.Environment[key]
			if v == nil || strings.Contains(*v, testPassword) || strings.Contains(*v, "sslmode=disable") {
				t.Errorf("readings' %s = %v, want a URL without the password and without sslmode=disable", key, v)
			}
		}
	})

	t.Run("HealthChecks", func(t *testing.T) {
		if hc := readings.HealthCheck; hc == nil || !slices.Equal(hc.Test, types.HealthCheckTest{"CMD", "/readings", "healthcheck"}) {
			t.Errorf("readings' health check = %+v, want /readings healthcheck", hc)
		}
		if db.HealthCheck == nil || len(db.HealthCheck.Test) == 0 {
			t.Error("db has no health check")
		}
		if dep, ok := haproxy.DependsOn["readings"]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("haproxy depends on readings %+v, want once it is healthy", dep)
		}
		for _, s := range []types.ServiceConfig{standby, readings} {
			if dep, ok := s.DependsOn["db"]; !ok || dep.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s depends on db %+v, want once it is healthy", s.Name, dep)
			}
		}
	})

	t.Run("ReplicationSlot", func(t *testing.T) {
		script := strings.Join(standby.Command, " ")
		for _, want := range []string{"pg_create_physical_replication_slot('standby')", "-S standby", "-R", "hot_standby_feedback = on"} {
			if !strings.Contains(script, want) {
				t.Errorf("the standby's command lacks %q:\n%s", want, script)
			}
		}
		if !slices.Contains(db.Command, "max_slot_wal_keep_size=8GB") {
			t.Errorf("db's command %q does not bound the WAL a slot keeps", db.Command)
		}
	})

	t.Run("Backups", func(t *testing.T) {
		if !slices.Contains(db.Command, "archive_mode=on") || !slices.Contains(db.Command, "archive_command=pgbackrest --stanza=readings archive-push %p") {
			t.Errorf("db's command %q does not archive its WAL with pgBackRest", db.Command)
		}
		conf, ok := p.Configs["pgbackrest"]
		if !ok || !strings.Contains(conf.Content, "[readings]") || !strings.Contains(conf.Content, "repo1-path=/var/lib/pgbackrest") {
			t.Errorf("the pgbackrest config = %q, want the stanza readings and its repository", conf.Content)
		}
		if !slices.ContainsFunc(db.Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Source == "pgbackrest" && v.Target == "/var/lib/pgbackrest"
		}) {
			t.Errorf("db's volumes %+v lack the pgBackRest repository", db.Volumes)
		}
		if stanza := p.Configs["pgbackrest-stanza"]; !strings.Contains(stanza.Content, "stanza-create") {
			t.Errorf("no init script creates the stanza: %q", stanza.Content)
		}
	})

	t.Run("Exposure", func(t *testing.T) {
		if readings.Deploy == nil || readings.Deploy.Replicas == nil || *readings.Deploy.Replicas != 3 {
			t.Errorf("readings' replicas = %+v, want 3", readings.Deploy)
		}
		for _, s := range p.Services {
			for _, port := range s.Ports {
				if port.HostIP != "127.0.0.1" {
					t.Errorf("%s publishes %s:%s on %q, want only 127.0.0.1", s.Name, port.Published, port.Protocol, port.HostIP)
				}
			}
			if len(s.Ports) > 0 && s.Name != "haproxy" {
				t.Errorf("%s publishes ports; only haproxy should", s.Name)
			}
		}
		cfg := p.Configs["haproxy"].Content
		for _, want := range []string{"option httpchk GET /readyz", "balance hdr(Authorization)", "retry-on conn-failure empty-response response-timeout"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("HAProxy's configuration lacks %q", want)
			}
		}
	})
}
