package app

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFitText(t *testing.T) {
	lines := func(n int, line string) string { return strings.Repeat(line+"\n", n) }
	tests := []struct {
		name  string
		in    string
		limit int
	}{
		{"lines", "HEAD\n" + lines(5000, "a line of build output") + "TAIL\n", 4096},
		{"one long line", "HEAD" + strings.Repeat("x", 100_000) + "TAIL", MaxTextLength},
		{"multibyte runes", "HEAD" + strings.Repeat("😕é", 40_000) + "TAIL", MaxTextLength},
		{"GitHub's limit", "HEAD\n" + lines(10_000, "ok  	github.com/agentbot/agentbot/app	0.123s") + "TAIL", MaxTextLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FitText(tc.in, tc.limit)
			if len(got) > tc.limit {
				t.Errorf("%d bytes, limit %d", len(got), tc.limit)
			}
			if len(got) < tc.limit*9/10 {
				t.Errorf("%d bytes: wasted more than a tenth of %d", len(got), tc.limit)
			}
			if !utf8.ValidString(got) {
				t.Error("a rune was split")
			}
			if !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") && !strings.HasSuffix(got, "TAIL\n") {
				t.Errorf("head or tail lost: %q … %q", got[:20], got[len(got)-20:])
			}
			head, rest, ok := strings.Cut(got, "\n\n… ")
			count, tail, ok2 := strings.Cut(rest, " characters cut here to fit GitHub's limit …\n\n")
			n, err := strconv.Atoi(count)
			if !ok || !ok2 || err != nil {
				t.Fatalf("no note says the text was cut")
			}
			if kept := utf8.RuneCountInString(head) + utf8.RuneCountInString(tail); kept+n != utf8.RuneCountInString(tc.in) {
				t.Errorf("note says %d characters cut, but %d of %d were kept", n, kept, utf8.RuneCountInString(tc.in))
			}
		})
	}
}

func TestFitTextKeepsWhatFits(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("x", MaxTextLength)} {
		if got := FitText(s, MaxTextLength); got != s {
			t.Errorf("FitText changed a %d-byte text", len(s))
		}
	}
}

func TestFitTextCutsAtLineEnds(t *testing.T) {
	in := strings.Repeat("0123456789abcdef\n", 1000)
	got := FitText(in, 2000)
	head, tail, ok := strings.Cut(got, "\n\n… ")
	if !ok {
		t.Fatalf("no note in %q", got)
	}
	_, tail, _ = strings.Cut(tail, " …\n\n")
	for _, part := range []string{head, tail} {
		for l := range strings.Lines(part) {
			if l != "0123456789abcdef\n" {
				t.Fatalf("partial line %q kept", l)
			}
		}
	}
}
