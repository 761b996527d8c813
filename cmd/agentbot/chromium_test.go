package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser is headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, messages ended by a
// NUL byte), which lets a test watch a page change while it stays open.
type browser struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	mu      sync.Mutex
	next    int
	pending map[int]chan answer
	dead    error // why the pipe from chromium closed
}

// chromiumBin finds Chromium, or skips the test (fails it under CI=true).
func chromiumBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI requires it (make test-deps)")
		}
		t.Skip("chromium is not installed (make test-deps)")
	}
	return bin
}

// startBrowser starts headless Chromium for the test, closed when it ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromiumBin(t)
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChrome, chromeEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--window-size=1280,800", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, chromeEnd}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	chromeEnd.Close()
	b := &browser{cmd: cmd, in: ourEnd, out: bufio.NewReader(fromChrome), pending: map[int]chan answer{}}
	go b.read()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = b.call(ctx, "", "Browser.close", nil)
		ourEnd.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		fromChrome.Close()
	})
	return b
}

// answer is the browser's answer to one call.
type answer struct {
	raw json.RawMessage
	err error
}

// read hands each answer to the call waiting for it, and drops events.
func (b *browser) read() {
	for {
		line, err := b.out.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				ch <- answer{err: fmt.Errorf("chromium went away: %w", err)}
				delete(b.pending, id)
			}
			b.dead = err
			b.mu.Unlock()
			return
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(bytes.TrimSuffix(line, []byte{0}), &m) != nil || m.ID == 0 {
			continue // an event
		}
		a := answer{raw: m.Result}
		if m.Error != nil {
			a.err = errors.New(m.Error.Message)
		}
		b.mu.Lock()
		if ch, ok := b.pending[m.ID]; ok {
			ch <- a
			delete(b.pending, m.ID)
		}
		b.mu.Unlock()
	}
}

// call sends method with params to the session (the browser's own when
// "") and returns its result.
func (b *browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	if b.dead != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("%s: chromium went away: %w", method, b.dead)
	}
	b.next++
	id := b.next
	ch := make(chan answer, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params, "sessionId": session})
	if err != nil {
		return nil, err
	}
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("%s: %w", method, a.err)
		}
		return a.raw, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// tab is one page of the browser.
type tab struct {
	b       *browser
	session string
}

// open opens url in a new tab.
func (b *browser) open(t *testing.T, url string) *tab {
	t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	raw, err := b.call(t.Context(), "", "Target.createTarget", map[string]any{"url": url})
	if err == nil {
		err = json.Unmarshal(raw, &target)
	}
	if err == nil {
		raw, err = b.call(t.Context(), "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	}
	if err == nil {
		err = json.Unmarshal(raw, &attached)
	}
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return &tab{b: b, session: attached.SessionID}
}

// eval returns what the JavaScript expression evaluates to in the page.
func (tb *tab) eval(t *testing.T, expr string) any {
	t.Helper()
	raw, err := tb.b.call(t.Context(), tb.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Result.Value
}

// text is the page's text as rendered.
func (tb *tab) text(t *testing.T) string {
	s, _ := tb.eval(t, `document.body ? document.body.innerText : ""`).(string)
	return s
}

// waitText waits until the page shows every one of want, and returns its
// text.
func (tb *tab) waitText(t *testing.T, timeout time.Duration, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		text := tb.text(t)
		missing := ""
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed %q; it shows:\n%s", missing, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// screenshot saves the whole page, beyond the window, as a PNG at path.
func (tb *tab) screenshot(t *testing.T, path string) {
	t.Helper()
	height, _ := tb.eval(t, `document.documentElement.scrollHeight`).(float64)
	raw, err := tb.b.call(t.Context(), tb.session, "Page.captureScreenshot", map[string]any{"format": "png",
		"captureBeyondViewport": true, "clip": map[string]any{"x": 0, "y": 0, "width": 1280, "height": max(height, 800), "scale": 1}})
	if err != nil {
		t.Fatal(err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
