package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var matchTests = []struct {
	line, shown string
	want        bool
}{
	{`{"deleted":6}`, `{"deleted":6}`, true},
	{`{"deleted":7}`, `{"deleted":6}`, false},
	{`{"id":12,"name":"PZ-01"}`, `{"id":...,"name":"PZ-01"}`, true},
	{`{"id":12,"name":"PZ-02"}`, `{"id":...,"name":"PZ-01"}`, false},
	{`[{"a":1},{"b":2}]`, `[{"a":1}...]`, true},
	{`[{"a":1}]`, `...{"b":2}]`, false},
	{`abc`, `a...b...c`, true},
	{`ac`, `a...b...c`, false},
	{`a`, `a...a`, false}, // the two ends may not share a character
}

func TestMatches(t *testing.T) {
	for _, tt := range matchTests {
		if got := matches(tt.line, tt.shown); got != tt.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.line, tt.shown, got, tt.want)
		}
	}
}

func TestParseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	doc := "# Doc\n\n```sh\nX=1\necho $X\n# => 1\n```\n\n```text\nnot run\n```\n\n````sh\necho '```'\n````\n\n```go\nfmt.Println()\n```\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := parseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(blocks), 2; got != want {
		t.Fatalf("%d sh blocks, want %d: %+v", got, want, blocks)
	}
	if got, want := strings.Join(blocks[0].script, ";"), "X=1;echo $X"; got != want {
		t.Errorf("first block's script = %q, want %q", got, want)
	}
	if got, want := blocks[0].shown, []string{"1"}; !slices.Equal(got, want) {
		t.Errorf("first block shows %q, want %q", got, want)
	}
	if got, want := blocks[1].script, []string{"echo '```'"}; !slices.Equal(got, want) {
		t.Errorf("second block's script = %q, want %q", got, want)
	}
	if blocks[1].shown != nil {
		t.Errorf("second block shows %q, want nothing", blocks[1].shown)
	}
}

func TestRunChecksShownOutput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.md", "```sh\nN=41\n```\n\n```sh\necho $((N + 1))\n# => 42\n```\n")
	wrong := write("wrong.md", "```sh\necho 41\n# => 42\n```\n")
	failing := write("failing.md", "```sh\nfalse\necho never\n```\n")
	var out, errs strings.Builder
	if err := run([]string{good}, &out, &errs); err != nil {
		t.Errorf("run(good) = %v, want nil; stderr: %s", err, errs.String())
	}
	if err := run([]string{wrong}, &out, &errs); err == nil || !strings.Contains(err.Error(), "wrong.md:1") {
		t.Errorf("run(wrong) = %v, want an error naming wrong.md:1", err)
	}
	if err := run([]string{failing}, &out, &errs); err == nil || !strings.Contains(err.Error(), "failing.md:1") {
		t.Errorf("run(failing) = %v, want an error naming failing.md:1", err)
	}
}
