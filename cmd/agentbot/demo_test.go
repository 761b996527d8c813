package main

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/queue/redistest"
)

func TestDemo(t *testing.T) {
	rs := redistest.Start(t)
	tests := []struct {
		name    string
		stopped bool // no Redis answers at the URL: demo starts its own
	}{
		{"with a running Redis", false},
		{"starting its own Redis", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.stopped {
				rs.Stop()
			}
			env, out, logs := testEnv(nil)
			if err := run(t.Context(), []string{"demo", "--redis-url", rs.URL}, env); err != nil {
				t.Fatalf("demo: %v\n%s\n%s", err, out, logs)
			}
			for _, want := range []string{"answer: 202", "queued in Redis", "state:      queued", "the typo in README.md"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("demo output lacks %q:\n%s", want, out)
				}
			}
			if started := strings.Contains(out.String(), "started a private redis-server"); started != tt.stopped {
				t.Errorf("demo started its own Redis: %v; want %v", started, tt.stopped)
			}
		})
	}
}
