package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// The work tree is written by the sandbox, which can plant a FIFO, a socket
// or (with privileges it should not have) a device where a file is
// expected. open(2) of a FIFO blocks until a writer comes, past any
// cancellation, and a device read never ends; so every host read and write
// here opens with O_NONBLOCK, which makes open return at once, and refuses
// anything fstat does not call a regular file before touching its content.

// errIsDir is the error for a directory where a file is expected.
var errIsDir = errors.New("is a directory")

// readChunk is how much is read between checks of the context.
const readChunk = 1 << 20

// errNotRegular refuses a non-regular file, naming what it is.
func errNotRegular(p string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	case mode.IsDir():
		return fmt.Errorf("%s: %w", p, errIsDir)
	}
	return fmt.Errorf("%s is %s, not a regular file; the tools read and write regular files only", p, what)
}

// openRegular opens p in root without blocking and checks, on the open
// file, that it is a regular file. flag is added to O_NONBLOCK|O_CLOEXEC.
func openRegular(root *os.Root, p string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(p, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if errors.Is(err, syscall.ENXIO) {
		// A FIFO without a reader, opened for writing.
		return nil, nil, errNotRegular(p, fs.ModeNamedPipe)
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, errNotRegular(p, fi.Mode())
	}
	return f, fi, nil
}

// readRegular reads the regular file p of root, refusing anything else and
// files over limit bytes, and stops when ctx ends. The file is statted
// before it is opened too, so that a device is refused without an open.
func readRegular(ctx context.Context, root *os.Root, p string, limit int64) ([]byte, error) {
	if fi, err := root.Stat(p); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, errNotRegular(p, fi.Mode())
	}
	f, fi, err := openRegular(root, p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, too large to read", p, fi.Size())
	}
	// The file may grow while it is read: read at most limit+1 bytes to
	// tell.
	buf := make([]byte, 0, fi.Size())
	r := io.LimitReader(f, limit+1)
	chunk := make([]byte, min(readChunk, limit+1))
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
	}
	if int64(len(buf)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes, too large to read", p, limit)
	}
	return buf, nil
}

// writeRegular replaces the content of p with data, creating it with perm
// if it does not exist; an existing p must be a regular file.
func writeRegular(root *os.Root, p string, data []byte, perm fs.FileMode) error {
	f, _, err := openRegular(root, p, os.O_WRONLY|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return fmt.Errorf("truncate %s: %w", p, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	return f.Close()
}

// maxLinkHops bounds the symlinks followed when resolving a path, as the
// kernel's 40 does.
const maxLinkHops = 40

// resolve returns the tree-relative path that p, clean and tree-relative,
// names once every symlink on the way is followed, the last one included:
// where a write to p lands. The file itself need not exist. A symlink that
// is absolute or leads out of the tree is an error (os.Root would refuse to
// follow it anyway).
func resolve(root *os.Root, p string) (string, error) {
	hops := 0
	var walk func(done string, rest []string) (string, error)
	walk = func(done string, rest []string) (string, error) {
		for i, part := range rest {
			switch part {
			case "", ".":
				continue
			case "..":
				if done == "" {
					return "", fmt.Errorf("%s leads out of the repository", p)
				}
				done = parentDir(done)
				continue
			}
			next := path.Join(done, part)
			fi, err := root.Lstat(next)
			if errors.Is(err, fs.ErrNotExist) {
				r := path.Join(append([]string{next}, rest[i+1:]...)...)
				if r == ".." || strings.HasPrefix(r, "../") {
					return "", fmt.Errorf("%s leads out of the repository", p)
				}
				return r, nil
			}
			if err != nil {
				return "", err
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				done = next
				continue
			}
			if hops++; hops > maxLinkHops {
				return "", fmt.Errorf("%s goes through more than %d symlinks", p, maxLinkHops)
			}
			target, err := root.Readlink(next)
			if err != nil {
				return "", err
			}
			if path.IsAbs(target) {
				return "", fmt.Errorf("%s goes through the symlink %s to %q, outside the repository", p, next, target)
			}
			resolved, err := walk(done, strings.Split(target, "/"))
			if err != nil {
				return "", err
			}
			done = resolved
		}
		return done, nil
	}
	r, err := walk("", strings.Split(p, "/"))
	if err != nil {
		return "", err
	}
	if r == "" {
		return ".", nil
	}
	return r, nil
}

// parentDir is path.Dir with the tree's top as "".
func parentDir(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}
