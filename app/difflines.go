package app

import (
	"regexp"
	"strconv"
	"strings"
)

// hunkRE reads a hunk header's new-side start and length.
var hunkRE = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// DiffLines maps each file of a unified diff to the lines of its new side
// that the diff shows: the lines a review comment may be on (GitHub
// refuses the whole review when one comment's line is not).
func DiffLines(diff string) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	var cur map[int]bool
	for line := range strings.SplitSeq(diff, "\n") {
		if name, ok := strings.CutPrefix(line, "+++ b/"); ok {
			cur = map[int]bool{}
			out[name] = cur
			continue
		}
		if strings.HasPrefix(line, "+++ ") {
			cur = nil // a deleted file
			continue
		}
		m := hunkRE.FindStringSubmatch(line)
		if m == nil || cur == nil {
			continue
		}
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		for l := start; l < start+n; l++ {
			cur[l] = true
		}
	}
	return out
}
