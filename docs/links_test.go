// Package docs holds the user documentation's pages; its test checks that
// their links between each other resolve.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// link matches a markdown link or image: [text](target).
var link = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// fence matches a fenced code block, whose text is not markdown.
var fence = regexp.MustCompile("(?ms)^```.*?^```")

// pages lists the documentation pages, relative to the repository root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md", "../CONTRIBUTING.md", "../CHANGELOG.md"}, docs...)
}

// anchors returns the anchors GitHub gives the headings of a markdown page:
// the heading in lower case, without punctuation, spaces as hyphens, a
// repeated one suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(fence.ReplaceAllString(text, ""), "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// TestLinksResolve checks every relative link of README.md, CHANGELOG.md,
// CONTRIBUTING.md and docs/*.md: the file it names exists, and the heading
// its #anchor names is on that page.
func TestLinksResolve(t *testing.T) {
	t.Parallel()
	text := map[string]string{}
	read := func(path string) (string, error) {
		if s, ok := text[path]; ok {
			return s, nil
		}
		b, err := os.ReadFile(path)
		text[path] = string(b)
		return string(b), err
	}
	var checked int
	for _, page := range pages(t) {
		body, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(body, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			name := strings.TrimPrefix(page, "../")
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no file %s", name, target, strings.TrimPrefix(path, "../"))
				continue
			}
			if anchor == "" {
				continue
			}
			dest, err := read(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", name, target, err)
				continue
			}
			if !anchors(dest)[anchor] {
				t.Errorf("%s: link %s: %s has no heading with the anchor #%s", name, target, strings.TrimPrefix(path, "../"), anchor)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d links; the link pattern is broken", checked)
	}
}

// TestAnchors pins the anchor rule on headings like the pages'.
func TestAnchors(t *testing.T) {
	t.Parallel()
	got := anchors("# Why these libraries\n## The Redis protocol, for worker authors\n```\n# not a heading\n```\n### The gauges (`--operator`, `--guard`)\n## Tokens\n## Tokens\n")
	for _, want := range []string{"why-these-libraries", "the-redis-protocol-for-worker-authors", "the-gauges---operator---guard", "tokens", "tokens-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a line in a code block counted as a heading: %v", got)
	}
}

// maxReadmeLines bounds the README: what a newcomer needs in the first ten
// minutes (what refresher is, the demo, run and test, the columns, the SQL,
// the UI, links); the reference lives in docs/.
const maxReadmeLines = 300

// TestReadmeIsShort keeps the README within maxReadmeLines.
func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the reference part of what was added to its page in docs/ and link it", n, maxReadmeLines)
	}
}
