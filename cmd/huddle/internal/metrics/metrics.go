// Package metrics serves a node's counters, state and histograms to
// Prometheus: `huddle run --metrics-addr HOST:PORT` serves /metrics (the
// Prometheus text format, or OpenMetrics when the scraper asks for it),
// and with --metrics-pprof Go's /debug/pprof too. docs/operations.md lists
// the metrics.
//
// Every scrape reads the node's status in its loop, as `huddle status`
// does: the counters of node.stats (named in catalogue), gauges of the
// view, the leader and the lock, and histograms of loss recovery, view
// changes, lock waits, elections and the ordering latency of the node's
// own total and safe messages.
package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/huddle-lan/huddle"
)

// Source is what the exporter reads: a node's status, read in its loop
// (huddle.Group).
type Source interface {
	Status(ctx context.Context) (huddle.Status, error)
}

// scrapeTimeout bounds how long a scrape waits for the node's loop.
const scrapeTimeout = 2 * time.Second

// Exporter is a prometheus.Collector of one node.
type Exporter struct {
	src    Source
	window int // the send window, in messages
	descs  map[string]*prometheus.Desc
}

// The metrics of the node's state, beside the counters.
var (
	upDesc        = prometheus.NewDesc("huddle_up", "1 when the node answered the scrape.", nil, nil)
	infoDesc      = prometheus.NewDesc("huddle_node_info", "The node's identity, as labels; always 1.", []string{"id", "group", "addr", "election"}, nil)
	incDesc       = prometheus.NewDesc("huddle_incarnation", "The node's incarnation: its start time in microseconds since 1970.", nil, nil)
	stateDesc     = prometheus.NewDesc("huddle_state", "1 for the node's state: joining (no view yet), member, or changing (a view change holds sends).", []string{"state"}, nil)
	membersDesc   = prometheus.NewDesc("huddle_view_members", "Members of the installed view.", nil, nil)
	epochDesc     = prometheus.NewDesc("huddle_view_epoch", "Epoch of the installed view.", nil, nil)
	primaryDesc   = prometheus.NewDesc("huddle_view_primary", "1 when the installed view is the primary component (always with quorum off), else 0.", nil, nil)
	coordDesc     = prometheus.NewDesc("huddle_view_coordinator", "ID of the installed view's coordinator (and first sequencer).", nil, nil)
	leaderDesc    = prometheus.NewDesc("huddle_leader", "ID of the elected leader this node knows; 0 for none yet.", nil, nil)
	roundDesc     = prometheus.NewDesc("huddle_leader_round", "The election round that chose the leader.", nil, nil)
	seqrDesc      = prometheus.NewDesc("huddle_sequencer", "ID of the member that orders total and safe messages now; 0 before the first view.", nil, nil)
	lockDesc      = prometheus.NewDesc("huddle_lock_state", "1 for this node's lock state: released, wanted or held.", []string{"state"}, nil)
	windowDesc    = prometheus.NewDesc("huddle_send_window_used_ratio", "Own unstable messages over the send window (1: sends wait).", nil, nil)
	windowMaxDesc = prometheus.NewDesc("huddle_send_window_messages", "The send window: most unstable own messages before sends wait.", nil, nil)
)

// The histograms: a huddle.Histogram of the node's, the metric, and
// its help.
var histograms = []struct {
	get  func(*huddle.Histograms) *huddle.Histogram
	desc *prometheus.Desc
}{
	{func(h *huddle.Histograms) *huddle.Histogram { return &h.Recovery },
		prometheus.NewDesc("huddle_recovery_seconds", "Time from finding a message missing to receiving it.", nil, nil)},
	{func(h *huddle.Histograms) *huddle.Histogram { return &h.Flush },
		prometheus.NewDesc("huddle_flush_seconds", "View changes at this node, from their start here to the install.", nil, nil)},
	{func(h *huddle.Histograms) *huddle.Histogram { return &h.LockWait },
		prometheus.NewDesc("huddle_lock_wait_seconds", "Time from a lock request to its grant.", nil, nil)},
	{func(h *huddle.Histograms) *huddle.Histogram { return &h.Election },
		prometheus.NewDesc("huddle_election_seconds", "Time from this node's first part in an election round to learning its leader.", nil, nil)},
	{func(h *huddle.Histograms) *huddle.Histogram { return &h.Delivery },
		prometheus.NewDesc("huddle_delivery_seconds", "Time from this node's multicast of a total or safe message to its own delivery of it.", nil, nil)},
}

// bounds are the histograms' bucket bounds: 100 µs to 10 s.
var bounds = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// New returns the exporter of src, whose send window is window messages.
func New(src Source, window int) *Exporter {
	e := &Exporter{src: src, window: window, descs: map[string]*prometheus.Desc{}}
	for counter, s := range catalogue {
		e.descs[counter] = prometheus.NewDesc(s.name, s.help, nil, nil)
	}
	return e
}

// Describe sends every metric's description.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range e.descs {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{upDesc, infoDesc, incDesc, stateDesc, membersDesc, epochDesc, primaryDesc, coordDesc,
		leaderDesc, roundDesc, seqrDesc, lockDesc, windowDesc, windowMaxDesc} {
		ch <- d
	}
	for _, h := range histograms {
		ch <- h.desc
	}
}

// Collect reads the node's status and sends its metrics. A node that does
// not answer (stopped, or its loop stuck past the timeout) gives huddle_up
// 0 and nothing else.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	st, err := e.src.Status(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for _, c := range st.Counters {
		s, ok := catalogue[c.Name]
		if !ok {
			continue // TestEveryCounterIsExported keeps this from happening
		}
		v, ok := number(c.Value)
		if !ok {
			continue
		}
		if s.scale != 0 {
			v *= s.scale
		}
		kind := prometheus.CounterValue
		if s.gauge {
			kind = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(e.descs[c.Name], kind, v)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(infoDesc, 1, strconv.FormatUint(st.ID, 10), st.Group, st.Addr, st.Election)
	gauge(incDesc, float64(st.Incarnation))
	for _, s := range []string{huddle.StateJoining, huddle.StateMember, huddle.StateChanging} {
		gauge(stateDesc, boolValue(st.State == s), s)
	}
	gauge(membersDesc, float64(len(st.Members)))
	gauge(epochDesc, float64(epochOf(st.View)))
	gauge(primaryDesc, boolValue(st.Primary && st.State != huddle.StateJoining))
	gauge(coordDesc, float64(st.Coordinator))
	gauge(leaderDesc, float64(st.Leader))
	gauge(roundDesc, float64(st.LeaderRound))
	gauge(seqrDesc, float64(st.Sequencer))
	for _, s := range []string{"released", "wanted", "held"} {
		gauge(lockDesc, boolValue(st.Lock == s), s)
	}
	if e.window > 0 {
		unstable, _ := st.Counters.Get("unstable")
		u, _ := number(unstable)
		gauge(windowDesc, u/float64(e.window))
		gauge(windowMaxDesc, float64(e.window))
	}
	if st.Histograms != nil {
		for _, h := range histograms {
			hist := h.get(st.Histograms)
			counts := hist.Cumulative(bounds)
			buckets := make(map[float64]uint64, len(bounds))
			for i, b := range bounds {
				buckets[b.Seconds()] = counts[i]
			}
			ch <- prometheus.MustNewConstHistogram(h.desc, hist.Count(), hist.Sum().Seconds(), buckets)
		}
	}
}

// number is a counter's value as a float64.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case uint64:
		return float64(v), true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// epochOf is the epoch of a view ID as Status shows it, "epoch.coordinator".
func epochOf(view string) uint64 {
	e, _, _ := strings.Cut(view, ".")
	n, _ := strconv.ParseUint(e, 10, 64)
	return n
}

// Handler returns the endpoint's handler: /metrics with the node's
// metrics and the Go runtime's and the process's, and, with withPprof,
// /debug/pprof.
func Handler(e *Exporter, withPprof bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, Registry: reg}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "huddle: the metrics are at /metrics")
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Serve serves h on ln until ctx ends, then shuts the server down.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}
