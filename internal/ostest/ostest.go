// Package ostest holds the helpers that agentbot's tests share across
// packages: a tree of files written from a map, a buffer a running process
// writes while the test reads it, the parallelism of a test binary whose
// tests mostly wait on other processes, and the module's root.
package ostest

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// WriteTree writes name → content into dir, making the folders on the way.
// A content starting with "->" makes a symlink to the rest, and a name
// ending in "*" an executable file (the "*" dropped).
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// SyncBuffer is a bytes.Buffer that a running command or server writes
// while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// MinParallel raises -test.parallel to n unless it was given on the command
// line. It is called from TestMain, before m.Run, by packages whose
// parallel tests spend their time waiting on Redis, git, Docker and the
// processes they start rather than on the CPU: the default, GOMAXPROCS,
// would leave a two-core machine mostly idle while they wait.
func MinParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	f := flag.Lookup("test.parallel")
	if given || f == nil {
		return
	}
	if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur >= n {
		return
	}
	_ = f.Value.Set(strconv.Itoa(n))
}

// ModuleRoot is the root of the module a test runs in: the nearest
// directory with a go.mod at or above the working directory, which go test
// makes the package's. Not from a source file's path, which a -trimpath
// build (make test's) leaves relative.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = up
	}
}
