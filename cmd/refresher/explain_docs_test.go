package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docBlock matches the fenced console and sh blocks of a documentation
// page.
var docBlock = regexp.MustCompile("(?s)```(console|sh)\n(.*?)```")

// shellWords splits a command line as bash does (the pages' commands
// quote with single quotes), by asking bash itself.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("bash", "-c", "printf '%s\\0' "+line).Output()
	if err != nil {
		t.Fatalf("bash cannot split %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// command joins the lines of a command continued with a trailing
// backslash; rest are the lines after it.
func command(lines []string) (cmd string, rest []string) {
	var b strings.Builder
	for i, l := range lines {
		if s, ok := strings.CutSuffix(l, `\`); ok {
			b.WriteString(s)
			continue
		}
		b.WriteString(l)
		return b.String(), lines[i+1:]
	}
	return b.String(), nil
}

// TestDocsExplainExamples runs every `bin/refresher explain` command of
// the README and of docs/*.md (most are in docs/schedules.md) as written: a
// console example must print exactly the output shown below it, and a
// command in an sh block must succeed.
func TestDocsExplainExamples(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var consoles, commands int
	var throttled bool
	for _, page := range append([]string{"../../README.md"}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		c, n, th := runExplainExamples(t, strings.TrimPrefix(page, "../../"), string(text))
		consoles, commands, throttled = consoles+c, commands+n, throttled || th
	}
	t.Logf("%d console examples and %d commands of explain in the pages", consoles, commands)
	if consoles < 3 || commands < 2 || !throttled {
		t.Fatalf("found %d console examples and %d commands of explain in the pages (throttled: %v); the parser is broken", consoles, commands, throttled)
	}
}

// runExplainExamples runs the explain commands of one page and counts the
// console examples, the sh commands and whether one used --throttled.
func runExplainExamples(t *testing.T, page, text string) (consoles, commands int, throttled bool) {
	t.Helper()
	for _, m := range docBlock.FindAllStringSubmatch(text, -1) {
		lines := strings.Split(strings.TrimSuffix(m[2], "\n"), "\n")
		for len(lines) > 0 {
			line := lines[0]
			prompt := m[1] == "console"
			if prompt {
				var ok bool
				if line, ok = strings.CutPrefix(line, "$ "); !ok {
					lines = lines[1:]
					continue
				}
			}
			if !strings.HasPrefix(line, "bin/refresher explain ") {
				lines = lines[1:]
				continue
			}
			cmd, rest := command(append([]string{line}, lines[1:]...))
			lines = rest
			var want []string
			if prompt { // the output runs to the next prompt or the block's end
				for len(lines) > 0 && !strings.HasPrefix(lines[0], "$ ") {
					want, lines = append(want, lines[0]), lines[1:]
				}
			}
			args := shellWords(t, strings.TrimPrefix(cmd, "bin/refresher "))
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Errorf("%s: %s\nfails: %v", page, cmd, err)
				continue
			}
			throttled = throttled || strings.Contains(cmd, "--throttled")
			if !prompt {
				commands++
				continue
			}
			consoles++
			got := strings.TrimRight(stdout.String(), "\n")
			if w := strings.Join(want, "\n"); got != w {
				t.Errorf("%s: %s\nshows:\n%s\nbut it prints:\n%s", page, cmd, w, got)
			}
		}
	}
	return consoles, commands, throttled
}
