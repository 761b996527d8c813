// Command intakeonly is the webhook request path alone, built by
// TestIntakeLinksNoDockerNorGitHubClient to see what the linker keeps.
package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/webhook"
)

type nopQueue struct{}

func (nopQueue) Enqueue(context.Context, app.Task) (bool, error)              { return false, nil }
func (nopQueue) EnqueueEvent(context.Context, app.OutcomeEvent) (bool, error) { return false, nil }
func (nopQueue) MarkSeen(context.Context, string) (bool, error)               { return false, nil }
func (nopQueue) ClaimBody(_ context.Context, _, d string) (string, error)     { return d, nil }
func (nopQueue) Ping(context.Context) error                                   { return nil }

func main() {
	reg := prometheus.NewRegistry()
	m, err := webhook.NewMetrics(reg)
	if err != nil {
		panic(err)
	}
	h, err := webhook.NewHandler(webhook.Config{Secrets: [][]byte{[]byte("s")}, Queue: nopQueue{}, Deliveries: nopQueue{}, Metrics: m})
	if err != nil {
		panic(err)
	}
	panic(http.ListenAndServe("127.0.0.1:0", webhook.NewServer(h, nopQueue{}, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))))
}
