package queue

import (
	"slices"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// DepthCollector reports the number of tasks per queue and asynq state
// (pending, active, scheduled, retry, archived, completed), asked of Redis at
// scrape time so the figure is never stale.
type DepthCollector struct {
	insp *asynq.Inspector
	desc *prometheus.Desc
}

// NewDepthCollector returns a collector over rdb; register it on the
// metrics registry.
func NewDepthCollector(rdb redis.UniversalClient) *DepthCollector {
	return &DepthCollector{
		insp: asynq.NewInspectorFromRedisClient(rdb),
		desc: prometheus.NewDesc("agentbot_queue_depth",
			"Tasks in the queue by asynq state.", []string{"queue", "state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *DepthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. A queue that does not exist yet
// (nothing was ever enqueued) is reported as empty; a Redis failure makes
// the scrape report the error rather than a wrong zero.
func (c *DepthCollector) Collect(ch chan<- prometheus.Metric) {
	queues, err := c.insp.Queues()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	if !slices.Contains(queues, DefaultQueue) {
		c.emit(ch, DefaultQueue, &asynq.QueueInfo{})
	}
	for _, q := range queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			continue
		}
		c.emit(ch, q, info)
	}
}

func (c *DepthCollector) emit(ch chan<- prometheus.Metric, queue string, info *asynq.QueueInfo) {
	for _, s := range []struct {
		state string
		n     int
	}{
		{"pending", info.Pending}, {"active", info.Active}, {"scheduled", info.Scheduled},
		{"retry", info.Retry}, {"archived", info.Archived}, {"completed", info.Completed},
	} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.n), queue, s.state)
	}
}
