package runner

import (
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// citation is a reference to lines of a file as a model writes it:
// path:line or path:start-end, in backticks or not.
var citation = regexp.MustCompile("`?((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+):([0-9]+)(?:-([0-9]+))?`?")

// linkCitations turns every citation in answer of a file that exists in
// the tree read (fsys) into a link to those lines at commit sha, under
// webURL (https://github.com/OWNER/REPO): a reader follows the link to
// the code the answer was given from, even after the branch moved on.
// Citations of files that do not exist stay text, and code blocks are
// left as they are.
func linkCitations(answer, webURL, sha string, fsys fs.FS) string {
	lines := strings.Split(answer, "\n")
	var fence string
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if f := openFence(trimmed); f != "" {
			fence = f
			continue
		}
		lines[i] = citation.ReplaceAllStringFunc(line, func(m string) string {
			sub := citation.FindStringSubmatch(m)
			path, start, end := sub[1], sub[2], sub[3]
			if st, err := fs.Stat(fsys, path); err != nil || !st.Mode().IsRegular() {
				return m
			}
			from, err := strconv.Atoi(start)
			if err != nil || from < 1 {
				return m
			}
			anchor, text := fmt.Sprintf("L%d", from), fmt.Sprintf("%s:%d", path, from)
			if to, err := strconv.Atoi(end); err == nil && to > from {
				anchor, text = fmt.Sprintf("L%d-L%d", from, to), fmt.Sprintf("%s:%d-%d", path, from, to)
			}
			return fmt.Sprintf("[`%s`](%s/blob/%s/%s#%s)", text, webURL, sha, escapePath(path), anchor)
		})
	}
	return strings.Join(lines, "\n")
}

// openFence returns the fence a line opens (``` or ~~~), or "".
func openFence(line string) string {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(line, f) {
			return f
		}
	}
	return ""
}

// escapePath escapes each segment of a repository path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
