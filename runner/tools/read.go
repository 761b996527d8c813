package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

const (
	maxListed     = 1000    // entries list_files shows
	maxReadLines  = 400     // lines read_file shows at once
	maxFileBytes  = 8 << 20 // larger files are not read
	maxSearchFile = 2 << 20 // larger files are not searched
	binarySniff   = 8000    // bytes looked at for a NUL, as git does
)

// cleanPath turns a model-supplied path into a clean, slash-separated path
// relative to the work tree. os.Root is what actually keeps access inside the
// tree; this gives the model a clear error first and keeps .git out of reach.
func cleanPath(p string) (string, error) {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) {
		return "", fmt.Errorf("%s is absolute; use a path relative to the repository root", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%s leaves the repository", p)
	}
	if c == ".git" || strings.HasPrefix(c, ".git/") {
		return "", fmt.Errorf("%s is inside .git, which the tools do not touch", p)
	}
	return c, nil
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

// ignoreRule is one line of a .gitignore, as a doublestar pattern over
// tree-relative paths.
type ignoreRule struct {
	glob    string
	negate  bool
	dirOnly bool
}

// ignorer holds the .gitignore rules seen so far in a walk. Rules of deeper
// files come later, and the last matching rule wins, as in git.
type ignorer struct {
	ctx   context.Context
	root  *os.Root
	rules []ignoreRule
}

// maxIgnoreFile bounds a .gitignore that is read; a larger one is skipped.
const maxIgnoreFile = 1 << 20

func (ig *ignorer) load(dir string) {
	b, err := readRegular(ig.ctx, ig.root, path.Join(dir, ".gitignore"), maxIgnoreFile)
	if err != nil {
		return
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimRight(line, " \r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if r.negate = strings.HasPrefix(line, "!"); r.negate {
			line = line[1:]
		}
		if r.dirOnly = strings.HasSuffix(line, "/"); r.dirOnly {
			line = strings.TrimSuffix(line, "/")
		}
		if strings.Contains(line, "/") {
			r.glob = path.Join(dir, strings.TrimPrefix(line, "/"))
		} else {
			r.glob = path.Join(dir, "**", line)
		}
		ig.rules = append(ig.rules, r)
	}
}

func (ig *ignorer) ignored(p string, isDir bool) bool {
	ignored := false
	for _, r := range ig.rules {
		if r.dirOnly && !isDir {
			continue
		}
		if doublestar.MatchUnvalidated(r.glob, p) {
			ignored = !r.negate
		}
	}
	return ignored
}

// walk visits the files and directories under start, skipping .git and what
// .gitignore files ignore. fn's path is tree-relative. It stops when ctx
// ends.
func (s *Set) walk(ctx context.Context, start string, fn func(p string, d fs.DirEntry) error) error {
	fsys := s.root.FS()
	ig := &ignorer{ctx: ctx, root: s.root}
	dir := "."
	ig.load(dir)
	if start != "." {
		for part := range strings.SplitSeq(path.Dir(start), "/") {
			if part == "." {
				break
			}
			dir = path.Join(dir, part)
			ig.load(dir)
		}
	}
	return fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == start {
				return err
			}
			return nil // a file that vanished or cannot be read is not the model's problem
		}
		if p != start && (d.Name() == ".git" || ig.ignored(p, d.IsDir())) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			ig.load(p)
		}
		return fn(p, d)
	})
}

type listFilesArgs struct {
	Path  string `json:"path"`
	Depth int    `json:"depth"`
	Glob  string `json:"glob"`
}

func (a listFilesArgs) validate() error { return validGlob(a.Glob) }

func validGlob(g string) error {
	if g != "" && !doublestar.ValidatePattern(g) {
		return fmt.Errorf("glob %q is not a valid pattern", g)
	}
	return nil
}

func listFiles(ctx context.Context, s *Set, a listFilesArgs) Result {
	start, err := cleanPath(a.Path)
	if err != nil {
		return failed(a.Path, "%v", err)
	}
	depth := a.Depth
	if depth <= 0 {
		depth = 3
		if a.Glob != "" {
			depth = 1 << 30
		}
	}
	base := strings.Count(start, "/")
	if start == "." {
		base = -1
	}
	var out []string
	more := 0
	err = s.walk(ctx, start, func(p string, d fs.DirEntry) error {
		if p == start {
			return nil
		}
		if strings.Count(p, "/")-base > depth {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if a.Glob != "" && (d.IsDir() || !doublestar.MatchUnvalidated(a.Glob, p)) {
			return nil
		}
		if len(out) >= maxListed {
			more++
			return nil
		}
		if d.IsDir() {
			p += "/"
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return failed(start, "list %s: %v", start, err)
	}
	text := strings.Join(out, "\n")
	if len(out) == 0 {
		text = "(no files)"
	}
	if more > 0 {
		text += fmt.Sprintf("\n... and %d more; narrow the path, depth or glob", more)
	}
	return Result{Outcome: OK, Target: start, Output: text}
}

type readFileArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

func (a readFileArgs) validate() error {
	if a.Path == "" {
		return errors.New("path is required")
	}
	if a.EndLine > 0 && a.StartLine > a.EndLine {
		return fmt.Errorf("start_line %d is after end_line %d", a.StartLine, a.EndLine)
	}
	return nil
}

func readFile(ctx context.Context, s *Set, a readFileArgs) Result {
	p, b, fail, ok := s.readNamed(ctx, a.Path)
	if !ok {
		return fail
	}
	if isBinary(b) {
		return failed(p, "%s is a binary file of %d bytes", p, len(b))
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	from := max(a.StartLine, 1)
	to := len(lines)
	if a.EndLine > 0 {
		to = min(a.EndLine, to)
	}
	if from > len(lines) {
		return failed(p, "%s has %d lines; start_line %d is past the end", p, len(lines), from)
	}
	cut := to - from + 1
	to = min(to, from+maxReadLines-1)
	var sb strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&sb, "%6d\t%s\n", i, lines[i-1])
	}
	if cut > maxReadLines {
		fmt.Fprintf(&sb, "... cut at line %d of %d; read on with start_line %d\n", to, len(lines), to+1)
	}
	return Result{Outcome: OK, Target: p, Output: sb.String()}
}

// readNamed cleans a model-supplied path and reads the file it names. When
// either step fails it returns the failed Result to hand back, aimed at the
// path as far as it was understood, and ok false.
func (s *Set) readNamed(ctx context.Context, raw string) (p string, b []byte, fail Result, ok bool) {
	p, err := cleanPath(raw)
	if err != nil {
		return "", nil, failed(raw, "%v", err), false
	}
	b, err = s.readTree(ctx, p)
	if err != nil {
		return p, nil, failed(p, "%v", err), false
	}
	return p, b, Result{}, true
}

// readTree reads a regular file of the work tree, refusing directories,
// FIFOs and the like, and files too large to be worth showing.
func (s *Set) readTree(ctx context.Context, p string) ([]byte, error) {
	b, err := readRegular(ctx, s.root, p, maxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not exist", p)
	case errors.Is(err, errIsDir):
		return nil, fmt.Errorf("%s is a directory; use list_files", p)
	}
	return b, err
}

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Literal    bool   `json:"literal"`
	Glob       string `json:"glob"`
	Context    int    `json:"context"`
	MaxMatches int    `json:"max_matches"`
}

func (a searchArgs) validate() error {
	if a.Pattern == "" {
		return errors.New("pattern is required")
	}
	if a.Context < 0 || a.Context > 10 {
		return fmt.Errorf("context %d is outside 0..10", a.Context)
	}
	if a.MaxMatches < 0 || a.MaxMatches > 200 {
		return fmt.Errorf("max_matches %d is outside 1..200", a.MaxMatches)
	}
	return validGlob(a.Glob)
}

// search runs on the host in Go over os.Root rather than ripgrep in the
// sandbox: no process per call, no output parsing, and the same .gitignore and
// symlink rules as the other tools. Files without a match cost one regexp
// scan of their bytes.
func search(ctx context.Context, s *Set, a searchArgs) Result {
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return invalid("pattern %q is not a valid Go regular expression: %v; set literal to true to search for the text itself", a.Pattern, err)
	}
	limit := a.MaxMatches
	if limit == 0 {
		limit = 50
	}
	type hits struct {
		b    []byte
		locs [][]int
	}
	found, err := scan(ctx, s, a.Glob, nil, func(_ string, b []byte) (hits, bool) {
		locs := re.FindAllIndex(b, limit)
		return hits{b, locs}, len(locs) > 0
	})
	if err != nil {
		return failed(a.Pattern, "search: %v", err)
	}
	var sb strings.Builder
	matches := 0
	for _, f := range found {
		matches += writeMatches(&sb, f.path, f.v.b, f.v.locs, a.Context, limit-matches)
		if matches >= limit {
			break
		}
	}
	if matches == 0 {
		return Result{Outcome: OK, Target: a.Pattern, Output: "no matches"}
	}
	if matches >= limit {
		fmt.Fprintf(&sb, "... stopped at %d matches; narrow the pattern or the glob\n", limit)
	}
	return Result{Outcome: OK, Target: a.Pattern, Output: sb.String()}
}

// scanWorkers read and match files in parallel: the cost of a scan is
// mostly the open and read system calls, which overlap well.
const scanWorkers = 8

// scanned is one file's answer in a scan.
type scanned[T any] struct {
	path string
	v    T
}

// scan runs match over every regular, non-binary file of the tree that the
// glob and admit (when set) let through, in parallel, and returns the
// answers of the files that matched in walk order, so that output does not
// depend on scheduling.
func scan[T any](ctx context.Context, s *Set, glob string, admit func(string) bool, match func(p string, b []byte) (T, bool)) ([]scanned[T], error) {
	var paths []string
	var entries []fs.DirEntry
	err := s.walk(ctx, ".", func(p string, d fs.DirEntry) error {
		if d.Type().IsRegular() && (glob == "" || doublestar.MatchUnvalidated(glob, p)) && (admit == nil || admit(p)) {
			paths = append(paths, p)
			entries = append(entries, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	results := make([]*scanned[T], len(paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(scanWorkers, len(paths)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(paths) {
					return
				}
				b, ok := s.files.read(s, paths[i], entries[i])
				if !ok {
					continue
				}
				if v, ok := match(paths[i], b); ok {
					results[i] = &scanned[T]{paths[i], v}
				}
			}
		})
	}
	wg.Wait()
	var out []scanned[T]
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// cacheBytes bounds the file contents a Set keeps between scans.
const cacheBytes = 64 << 20

// fileCache keeps the searchable files' contents between scans, checked
// against each file's size and modification time, so that a search costs an
// lstat per unchanged file instead of an open, a read and a close. Writes
// through the tools drop their entries; a command's writes change the
// modification time.
type fileCache struct {
	mu    sync.Mutex
	files map[string]cachedFile
	bytes int
}

type cachedFile struct {
	size int64
	mod  time.Time
	data []byte // nil: not worth searching (binary, too large)
}

func (c *fileCache) read(s *Set, p string, d fs.DirEntry) ([]byte, bool) {
	fi, err := d.Info()
	if err != nil {
		return nil, false
	}
	c.mu.Lock()
	e, hit := c.files[p]
	c.mu.Unlock()
	if hit && e.size == fi.Size() && e.mod.Equal(fi.ModTime()) {
		return e.data, e.data != nil
	}
	b, ok := s.readSmall(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes-len(e.data)+len(b) <= cacheBytes {
		if c.files == nil {
			c.files = map[string]cachedFile{}
		}
		c.files[p] = cachedFile{size: fi.Size(), mod: fi.ModTime(), data: b}
		c.bytes += len(b) - len(e.data)
	}
	return b, ok
}

func (c *fileCache) drop(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes -= len(c.files[p].data)
	delete(c.files, p)
}

// readSmall reads a text file worth searching; false for a file that is
// too large, binary or unreadable.
func (s *Set) readSmall(p string) ([]byte, bool) {
	f, fi, err := openRegular(s.root, p, os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi.Size() > maxSearchFile {
		return nil, false
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil || isBinary(b) {
		return nil, false
	}
	return b, true
}

// writeMatches prints up to limit matching lines of one file, grep style:
// "path:N: line" for a match and "path-N- line" for context.
func writeMatches(sb *strings.Builder, p string, b []byte, locs [][]int, context, limit int) int {
	lines := bytes.Split(b, []byte("\n"))
	var hit []int // 0-based line indexes with a match, ascending, unique
	line, off := 0, 0
	for _, l := range locs {
		line += bytes.Count(b[off:l[0]], []byte("\n"))
		off = l[0]
		if len(hit) == 0 || hit[len(hit)-1] != line {
			hit = append(hit, line)
		}
		if len(hit) == limit {
			break
		}
	}
	shown := -1 // last line index printed
	for i, h := range hit {
		from := max(h-context, shown+1)
		to := min(h+context, len(lines)-1)
		if i > 0 && context > 0 && from > shown+1 {
			sb.WriteString("--\n")
		}
		for j := from; j <= to; j++ {
			sep := "-"
			if j == h || isHit(hit, j) {
				sep = ":"
			}
			fmt.Fprintf(sb, "%s%s%d%s %s\n", p, sep, j+1, sep, clip(string(lines[j]), 300))
		}
		shown = to
	}
	return len(hit)
}

func isHit(hit []int, j int) bool {
	for _, h := range hit {
		if h == j {
			return true
		}
	}
	return false
}

type findSymbolArgs struct {
	Name string `json:"name"`
	Glob string `json:"glob"`
}

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)?$`)

func (a findSymbolArgs) validate() error {
	if !identRE.MatchString(a.Name) {
		return fmt.Errorf("name %q is not an identifier (Name or Type.Method)", a.Name)
	}
	return validGlob(a.Glob)
}

// symbolPatterns are good-enough definition patterns per file extension for
// languages without a parser here; %s is the quoted name.
var symbolPatterns = map[string][]string{
	".py":   {`^\s*(async\s+)?(def|class)\s+%s\b`, `^%s\s*(:[^=]*)?=`},
	".js":   {`\b(function\*?|class)\s+%s\b`, `\b(const|let|var)\s+%s\s*=`, `^\s*(async\s+|static\s+|get\s+|set\s+)*%s\s*\([^)]*\)\s*\{`},
	".ts":   {`\b(function\*?|class|interface|type|enum)\s+%s\b`, `\b(const|let|var)\s+%s\b`, `^\s*(public\s+|private\s+|protected\s+|async\s+|static\s+|readonly\s+)*%s\s*[(<:=]`},
	".rs":   {`\b(fn|struct|enum|trait|type|const|static|mod|union)\s+%s\b`, `\bmacro_rules!\s*%s\b`},
	".java": {`\b(class|interface|enum|record)\s+%s\b`, `^\s*[\w<>\[\],@\s]*\s%s\s*\([^;]*$`},
	".c":    {`\b(struct|union|enum|class)\s+%s\b`, `^\s*#\s*define\s+%s\b`, `^[\w\*\s:<>,]*\b%s\s*\([^;]*$`, `\btypedef\b.*\b%s\s*;`},
	".rb":   {`^\s*(def|class|module)\s+(self\.)?%s\b`},
}

// symbolExts maps each extension to its pattern family.
var symbolExts = map[string]string{
	".py": ".py", ".js": ".js", ".jsx": ".js", ".mjs": ".js", ".cjs": ".js",
	".ts": ".ts", ".tsx": ".ts", ".rs": ".rs", ".java": ".java", ".kt": ".java", ".cs": ".java", ".scala": ".java",
	".c": ".c", ".h": ".c", ".cc": ".c", ".cpp": ".c", ".cxx": ".c", ".hpp": ".c", ".rb": ".rb",
}

func findSymbol(ctx context.Context, s *Set, a findSymbolArgs) Result {
	short := a.Name[strings.LastIndex(a.Name, ".")+1:]
	compiled := map[string]*regexp.Regexp{} // per language family; read-only once scanning starts
	// Parsing is the cost of a Go lookup: parse only files that have the
	// name as a whole word, which call sites mostly are not.
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(short) + `\b`)
	for fam := range symbolPatterns {
		compiled[fam] = symbolRegexp(fam, short)
	}
	admit := func(p string) bool {
		_, known := symbolExts[path.Ext(p)]
		return known || path.Ext(p) == ".go"
	}
	defs, err := scan(ctx, s, a.Glob, admit, func(p string, b []byte) ([]string, bool) {
		if !bytes.Contains(b, []byte(short)) {
			return nil, false
		}
		var lines []int
		if ext := path.Ext(p); ext == ".go" {
			if word.Match(b) {
				lines = goDefinitions(p, b, a.Name)
			}
		} else {
			for _, l := range compiled[symbolExts[ext]].FindAllIndex(b, -1) {
				lines = append(lines, bytes.Count(b[:l[0]], []byte("\n"))+1)
			}
		}
		if len(lines) == 0 {
			return nil, false
		}
		// Quote the definition lines here, while the file is in hand.
		text := bytes.Split(b, []byte("\n"))
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = fmt.Sprintf("%s:%d: %s", p, l, clip(strings.TrimSpace(string(text[l-1])), 200))
		}
		return out, true
	})
	if err != nil {
		return failed(a.Name, "find_symbol: %v", err)
	}
	var out []string
	for _, d := range defs {
		out = append(out, d.v...)
	}
	found := len(out)
	var sb strings.Builder
	for _, l := range out[:min(found, maxListed)] {
		sb.WriteString(l + "\n")
	}
	if found == 0 {
		return Result{Outcome: OK, Target: a.Name, Output: fmt.Sprintf("no definition of %s found; try search", a.Name)}
	}
	return Result{Outcome: OK, Target: a.Name, Output: sb.String()}
}

func symbolRegexp(family, name string) *regexp.Regexp {
	pats := symbolPatterns[family]
	alts := make([]string, len(pats))
	for i, p := range pats {
		alts[i] = "(?:" + fmt.Sprintf(p, regexp.QuoteMeta(name)) + ")"
	}
	return regexp.MustCompile("(?m)" + strings.Join(alts, "|"))
}

// goDefinitions returns the lines where a Go file defines name: a function,
// a method (Recv.Name or Name), a type, a constant or a variable.
func goDefinitions(p string, src []byte, name string) []int {
	fset := token.NewFileSet()
	// A file with syntax errors still yields the declarations parsed before
	// them, which is what the model is looking for mid-edit.
	f, _ := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if f == nil {
		return nil
	}
	recv, fn, dotted := strings.Cut(name, ".")
	if !dotted {
		fn, recv = name, ""
	}
	var lines []int
	add := func(pos token.Pos) { lines = append(lines, fset.Position(pos).Line) }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != fn {
				continue
			}
			if recv == "" || (d.Recv != nil && len(d.Recv.List) == 1 && receiverName(d.Recv.List[0].Type) == recv) {
				add(d.Pos())
			}
		case *ast.GenDecl:
			if dotted {
				continue
			}
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					if sp.Name.Name == name {
						add(sp.Pos())
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						if n.Name == name {
							add(n.Pos())
						}
					}
				}
			}
		}
	}
	return lines
}

func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
