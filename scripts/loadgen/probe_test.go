package main

import (
	"io"
	"testing"
	"time"
)

// events builds probe events from a compact picture: one character per
// 100 ms try, 'o' for a success, 'x' for a failure, 's' for a 503.
func events(t0 time.Time, picture string) []probeEvent {
	var es []probeEvent
	for i, c := range picture {
		start := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		e := probeEvent{start: start, end: start.Add(10 * time.Millisecond), ok: c == 'o', status: 200}
		switch c {
		case 'x':
			e.status = 0
		case 's':
			e.status = 503
		}
		es = append(es, e)
	}
	return es
}

func TestFindOutagesAndMeasure(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	pg := events(t0, "ooxxxooooooxxoo")
	ready := events(t0, "oosssssooooossoo")
	writes := events(t0, "ooxxxxxxoooosso")

	outages, unfinished := findOutages(pg)
	if unfinished {
		t.Fatal("findOutages: unfinished, want finished")
	}
	if len(outages) != 2 {
		t.Fatalf("findOutages found %d outages, want 2", len(outages))
	}
	measure(&outages[0], ready, writes, outages[1].down, 100*time.Millisecond)
	o := outages[0]
	if got, want := o.down, t0.Add(200*time.Millisecond); !got.Equal(want) {
		t.Errorf("outage 1 down at %v, want %v", got, want)
	}
	// The last failed try, the 5th, ends at 410 ms: PostgreSQL was back no sooner.
	if got, want := o.up, t0.Add(410*time.Millisecond); !got.Equal(want) {
		t.Errorf("outage 1 up at %v, want %v", got, want)
	}
	if got, want := o.ready503, 5; got != want {
		t.Errorf("outage 1: %d /readyz 503s, want %d", got, want)
	}
	// /readyz: first 200 started after 410 ms is the 8th try, ending at 710 ms.
	if got, want := o.readyBack, 300*time.Millisecond; got != want {
		t.Errorf("outage 1: /readyz back after %v, want %v", got, want)
	}
	if got, want := o.writeBack, 400*time.Millisecond; got != want {
		t.Errorf("outage 1: writes back after %v, want %v", got, want)
	}

	measure(&outages[1], ready, events(t0, "oooooooooooxxxx"), time.Time{}, 100*time.Millisecond)
	if got := outages[1].writeBack; got >= 0 {
		t.Errorf("outage 2: writes back after %v, want never (-1)", got)
	}
}

func TestFindOutagesUnfinished(t *testing.T) {
	outages, unfinished := findOutages(events(time.Now(), "ooxx"))
	if len(outages) != 0 || !unfinished {
		t.Errorf("findOutages(ooxx) = %d outages, unfinished %v; want 0, true", len(outages), unfinished)
	}
}

// The service refuses readings dated more than -max-future (24h) after its
// clock, so the probe's writes, a million batches on, must still be dated
// in the past: dated in 2051, every one was a 400.
func TestProbeWritesAreDatedInThePast(t *testing.T) {
	c, _ := parseProbe(nil, func(string) string { return "" }, io.Discard)
	if got := readingTime(c.tagStart+1_000_000, 0); !got.Before(time.Now()) {
		t.Errorf("the probe's millionth batch is dated %v, want before now", got)
	}
}
