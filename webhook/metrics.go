package webhook

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the webhook's Prometheus series.
type Metrics struct {
	requests *prometheus.CounterVec
	ack      prometheus.Histogram
	// bodyBytes is what the body budget holds: near its limit, deliveries
	// are being refused.
	bodyBytes prometheus.Gauge
}

// NewMetrics creates the series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbot_webhook_requests_total",
			Help: "Webhook deliveries by GitHub event and outcome.",
		}, []string{"event", "outcome"}),
		ack: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentbot_webhook_ack_seconds",
			Help:    "Time from receiving a webhook delivery to answering it.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		bodyBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentbot_webhook_body_bytes",
			Help: "Bytes of request bodies held in memory by the deliveries in flight, against the body budget.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.ack, m.bodyBytes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register webhook metrics: %w", err)
		}
	}
	return m, nil
}
