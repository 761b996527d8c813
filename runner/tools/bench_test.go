package tools_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/tools"
)

// largeTree is 3,000 Go files (about 12 MB) in 30 packages.
func largeTree(b *testing.B) string {
	files := map[string]string{".gitignore": "vendor/\n"}
	for f := range 3000 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "package p%d\n\n", f%30)
		for i := range 40 {
			fmt.Fprintf(&sb, "// F%d_%d returns its index plus the next file's.\nfunc F%d_%d() int { return %d + F%d_%d() }\n\n", f, i, f, i, i, (f+1)%3000, i)
		}
		files[fmt.Sprintf("p%d/file%04d.go", f%30, f)] = sb.String()
	}
	return tree(b, files)
}

// BenchmarkSearch compares the host-side search tool with running ripgrep
// for the same question, which is what the tool would cost as a process in
// the sandbox before any container round trip.
func BenchmarkSearch(b *testing.B) {
	dir := largeTree(b)
	s := newSet(b, dir, testPolicy(), nil)
	ctx := context.Background()
	b.Run("tool", func(b *testing.B) {
		for b.Loop() {
			r := s.Call(ctx, "search", `{"pattern":"func F1234_7\\(","context":2}`)
			if r.Outcome != tools.OK || !strings.Contains(r.Output, "file1234.go") {
				b.Fatal(r.Output)
			}
		}
	})
	b.Run("find_symbol", func(b *testing.B) {
		for b.Loop() {
			r := s.Call(ctx, "find_symbol", `{"name":"F1234_7"}`)
			if !strings.Contains(r.Output, "file1234.go:") {
				b.Fatal(r.Output)
			}
		}
	})
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("rg is not installed")
	}
	b.Run("ripgrep", func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command(rg, "-n", "-C2", `func F1234_7\(`, dir).Output()
			if err != nil || !strings.Contains(string(out), "file1234.go") {
				b.Fatal(err)
			}
		}
	})
}
