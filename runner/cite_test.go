package runner

import (
	"testing"
	"testing/fstest"
)

func TestLinkCitations(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"stats.go":          {Data: []byte("package stats\n")},
		"internal/x/y.go":   {Data: []byte("package x\n")},
		"docs/a b.md":       {Data: []byte("# a\n")},
		"internal/x/dir.go": {Data: []byte("package x\n")},
	}
	const web, sha = "https://github.com/acme/stats", "0123abcd"
	tests := []struct{ name, in, want string }{
		{"line in backticks", "See `stats.go:12`.", "See [`stats.go:12`](https://github.com/acme/stats/blob/0123abcd/stats.go#L12)."},
		{"range, bare", "in internal/x/y.go:3-9 it", "in [`internal/x/y.go:3-9`](https://github.com/acme/stats/blob/0123abcd/internal/x/y.go#L3-L9) it"},
		{"missing file stays text", "`nope.go:3` and http://host:80", "`nope.go:3` and http://host:80"},
		{"directory stays text", "internal/x:4", "internal/x:4"},
		{"line zero stays text", "stats.go:0", "stats.go:0"},
		{"code blocks untouched", "```\nstats.go:12\n```\nstats.go:1", "```\nstats.go:12\n```\n[`stats.go:1`](https://github.com/acme/stats/blob/0123abcd/stats.go#L1)"},
		{"backwards range is one line", "stats.go:9-3", "[`stats.go:9`](https://github.com/acme/stats/blob/0123abcd/stats.go#L9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := linkCitations(tt.in, web, sha, fsys); got != tt.want {
				t.Errorf("linkCitations(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
			}
		})
	}
}
