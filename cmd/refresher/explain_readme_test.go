package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// readmeBlock matches the README's fenced console and sh blocks.
var readmeBlock = regexp.MustCompile("(?s)```(console|sh)\n(.*?)```")

// shellWords splits a command line as bash does (the README's commands
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

// TestReadmeExplainExamples runs every `bin/refresher explain` command of
// the README as written: a console example must print exactly the output
// shown below it, and a command in an sh block must succeed.
func TestReadmeExplainExamples(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var consoles, commands int
	var throttled bool
	for _, m := range readmeBlock.FindAllStringSubmatch(string(readme), -1) {
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
				t.Errorf("README: %s\nfails: %v", cmd, err)
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
				t.Errorf("README: %s\nshows:\n%s\nbut it prints:\n%s", cmd, w, got)
			}
		}
	}
	t.Logf("%d console examples and %d commands of explain in the README", consoles, commands)
	if consoles < 3 || commands < 2 || !throttled {
		t.Fatalf("found %d console examples and %d commands of explain in the README (throttled: %v); the parser is broken", consoles, commands, throttled)
	}
}
