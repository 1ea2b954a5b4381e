// Command examples runs the shell examples of the project's Markdown files
// as written, in order, in one bash process, and checks the outputs they
// show. scripts/examples.sh runs it against a fresh `make run`.
//
// A fenced block marked sh is an example to run; any other block (console,
// text, go…) is only shown. Within an sh block, a line "# => text" shows
// what the command before it prints: once a block shows any output, its
// whole standard output must match the shown lines, one for one, where
// "..." in a shown line stands for any text. Variables a block sets are
// there for the blocks after it, as when a reader pastes them into one
// terminal.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "examples: %v\n", err)
		os.Exit(1)
	}
}

// block is one runnable example: where it is, its script, and the output
// it shows (nil when it shows none).
type block struct {
	where  string
	script []string
	shown  []string
}

const shownPrefix = "# => "

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("examples", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.Bool("list", false, "print the script that would run, and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var blocks []block
	for _, path := range fs.Args() {
		bs, err := parseFile(path)
		if err != nil {
			return err
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		return errors.New("no sh blocks in the files given")
	}
	work, err := os.MkdirTemp("", "examples-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	script := bashScript(blocks, work)
	if *list {
		_, err := io.WriteString(stdout, script)
		return err
	}

	cmd := exec.Command("bash", "-c", script)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	runErr := cmd.Run()
	reached := 0
	if b, err := os.ReadFile(filepath.Join(work, "reached")); err == nil {
		reached, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if runErr != nil {
		b := blocks[max(reached-1, 0)]
		return fmt.Errorf("the example at %s failed (%v):\n%s", b.where, runErr, strings.Join(b.script, "\n"))
	}
	var failed []string
	for i, b := range blocks {
		if b.shown == nil {
			continue
		}
		got, err := os.ReadFile(filepath.Join(work, strconv.Itoa(i+1)+".out"))
		if err != nil {
			return err
		}
		if msg := compare(strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"), b.shown); msg != "" {
			failed = append(failed, fmt.Sprintf("%s: %s", b.where, msg))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d examples print other than they show:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	fmt.Fprintf(stdout, "examples: %d blocks ran, the output of %d checked\n", len(blocks), countShown(blocks))
	return nil
}

func countShown(blocks []block) int {
	n := 0
	for _, b := range blocks {
		if b.shown != nil {
			n++
		}
	}
	return n
}

// parseFile returns the sh blocks of a Markdown file.
func parseFile(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks  []block
		current *block
		fence   string
		line    int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		switch {
		case fence == "" && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:strings.LastIndex(trimmed, "`")+1]
			if strings.TrimSpace(strings.TrimPrefix(trimmed, fence)) == "sh" {
				current = &block{where: fmt.Sprintf("%s:%d", path, line)}
			}
		case fence != "" && trimmed == fence:
			if current != nil {
				blocks = append(blocks, *current)
			}
			fence, current = "", nil
		case current != nil && strings.HasPrefix(trimmed, strings.TrimSpace(shownPrefix)):
			current.shown = append(current.shown, strings.TrimPrefix(strings.TrimPrefix(trimmed, "# =>"), " "))
		case current != nil:
			current.script = append(current.script, text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: a fenced block is not closed", path)
	}
	return blocks, nil
}

// bashScript runs every block in the current shell, so that what one sets
// the next can use, each with its output in a file of its own.
func bashScript(blocks []block, work string) string {
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	for i, bl := range blocks {
		n := strconv.Itoa(i + 1)
		fmt.Fprintf(&b, "\n# %s\necho %s > %q\n{\n%s\n} > %q\n",
			bl.where, n, filepath.Join(work, "reached"), strings.Join(bl.script, "\n"), filepath.Join(work, n+".out"))
	}
	return b.String()
}

// compare says how got differs from the shown lines, or "" when it does not.
func compare(got, shown []string) string {
	if len(got) != len(shown) {
		return fmt.Sprintf("printed %d lines, shows %d:\n  printed: %s\n  shown:   %s",
			len(got), len(shown), strings.Join(got, "\n           "), strings.Join(shown, "\n           "))
	}
	for i := range got {
		if !matches(got[i], shown[i]) {
			return fmt.Sprintf("line %d\n  printed: %s\n  shown:   %s", i+1, got[i], shown[i])
		}
	}
	return ""
}

// matches tells whether line is what shown shows, "..." standing for any
// text.
func matches(line, shown string) bool {
	parts := strings.Split(shown, "...")
	if len(parts) == 1 {
		return line == shown
	}
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	rest := line[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}
