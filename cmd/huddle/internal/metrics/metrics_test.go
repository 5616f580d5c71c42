package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
	"github.com/huddle-lan/huddle/internal/netmodel"
	"github.com/huddle-lan/huddle/multicast/memnet"
)

// realStatus is the status of a real node, run alone on the simulator's
// network in a bubble of virtual time until it founds its view.
func realStatus(t *testing.T) huddle.Status {
	t.Helper()
	var st huddle.Status
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := config.Local()
		cfg.ID, cfg.Iface = 7, "sim0"
		g, err := huddle.StartOn(ctx, cfg, zerolog.Nop(), memnet.New(netmodel.Options{Seed: 1}).Endpoint(netmodel.Addr(7)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if st, err = g.Status(ctx); err != nil {
				t.Fatal(err)
			}
			if st.State == huddle.StateMember {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-g.Done()
	})
	return st
}

// TestEveryCounterIsExported: every counter a node reports has a metric,
// every metric of the catalogue is a counter the node reports, and the
// names follow Prometheus' conventions and are unique.
func TestEveryCounterIsExported(t *testing.T) {
	st := realStatus(t)
	reported := map[string]bool{}
	for _, c := range st.Counters {
		reported[c.Name] = true
		if _, ok := catalogue[c.Name]; !ok {
			t.Errorf("counter %s has no metric in the catalogue", c.Name)
		}
	}
	names := map[string]string{}
	for counter, s := range catalogue {
		if !reported[counter] {
			t.Errorf("the catalogue exports %s, which the node does not report", counter)
		}
		if other, ok := names[s.name]; ok {
			t.Errorf("metric %s is both %s and %s", s.name, other, counter)
		}
		names[s.name] = counter
		switch {
		case !model.IsValidLegacyMetricName(s.name) || !strings.HasPrefix(s.name, "huddle_"):
			t.Errorf("%s: %q is not a huddle_ metric name", counter, s.name)
		case s.gauge == strings.HasSuffix(s.name, "_total"):
			t.Errorf("%s: %q: a counter's name ends in _total, a gauge's does not", counter, s.name)
		case s.help == "" || !strings.HasSuffix(s.help, "."):
			t.Errorf("%s: help %q is not a sentence", counter, s.help)
		}
	}
}

// source is a Source that returns a fixed status, or an error.
type source struct {
	st  huddle.Status
	err error
}

func (s source) Status(context.Context) (huddle.Status, error) { return s.st, s.err }

// scrape gets path from h with the Accept header accept, and returns the
// response's content type and body.
func scrape(t *testing.T, h http.Handler, path, accept string) (int, string, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), string(body)
}

// TestScrape scrapes a node's metrics over HTTP and parses them as
// Prometheus does: the counters as counters with their help, the state as
// gauges, the histograms with their buckets, count and sum.
func TestScrape(t *testing.T) {
	st := realStatus(t)
	st.Histograms.LockWait.Add(3 * time.Millisecond)
	st.Histograms.LockWait.Add(40 * time.Millisecond)
	st.Lock = "held"
	code, ctype, body := scrape(t, Handler(New(source{st: st}, 4096), false), "/metrics", "")
	if code != 200 || !strings.HasPrefix(ctype, "text/plain") {
		t.Fatalf("GET /metrics: %d %q", code, ctype)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	one := func(name string, typ dto.MetricType) *dto.Metric {
		t.Helper()
		f, ok := fams[name]
		switch {
		case !ok:
			t.Fatalf("no %s in the exposition", name)
		case f.GetType() != typ:
			t.Fatalf("%s is a %v, want a %v", name, f.GetType(), typ)
		case f.GetHelp() == "":
			t.Fatalf("%s has no help", name)
		}
		return f.Metric[0]
	}
	value := func(m *dto.Metric) float64 {
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	if v := value(one("huddle_up", dto.MetricType_GAUGE)); v != 1 {
		t.Errorf("huddle_up %v, want 1", v)
	}
	sessions, _ := st.Counters.Get("sessions_sent")
	if v := value(one("huddle_sessions_sent_total", dto.MetricType_COUNTER)); v != float64(sessions.(uint64)) || v == 0 {
		t.Errorf("huddle_sessions_sent_total %v, want the node's sessions_sent %v (not 0)", v, sessions)
	}
	if v := value(one("huddle_view_members", dto.MetricType_GAUGE)); v != 1 {
		t.Errorf("huddle_view_members %v, want 1 (alone)", v)
	}
	if v := value(one("huddle_view_coordinator", dto.MetricType_GAUGE)); v != 7 {
		t.Errorf("huddle_view_coordinator %v, want 7", v)
	}
	one("huddle_recovery_p99_seconds", dto.MetricType_GAUGE)
	one("huddle_srm_spread", dto.MetricType_GAUGE)
	for _, m := range fams["huddle_lock_state"].Metric {
		want := 0.0
		if m.Label[0].GetValue() == "held" {
			want = 1
		}
		if m.Gauge.GetValue() != want {
			t.Errorf("huddle_lock_state{state=%q} %v, want %v", m.Label[0].GetValue(), m.Gauge.GetValue(), want)
		}
	}
	h := one("huddle_lock_wait_seconds", dto.MetricType_HISTOGRAM).Histogram
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 0.043 || h.GetSampleSum() > 0.0431 {
		t.Errorf("huddle_lock_wait_seconds count %d sum %v, want 2 and 0.043", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.Bucket {
		want := uint64(0)
		switch le := b.GetUpperBound(); {
		case le >= 0.05:
			want = 2
		case le >= 0.005:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("huddle_lock_wait_seconds bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	one("huddle_recovery_seconds", dto.MetricType_HISTOGRAM)
	one("huddle_flush_seconds", dto.MetricType_HISTOGRAM)
	one("huddle_election_seconds", dto.MetricType_HISTOGRAM)
	one("huddle_delivery_seconds", dto.MetricType_HISTOGRAM)
	one("go_goroutines", dto.MetricType_GAUGE)

	// OpenMetrics, when the scraper asks for it.
	_, ctype, body = scrape(t, Handler(New(source{st: st}, 4096), false), "/metrics", "application/openmetrics-text; version=1.0.0")
	if !strings.HasPrefix(ctype, "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("OpenMetrics asked for: content type %q, body ending %q", ctype, body[max(0, len(body)-20):])
	}
}

// TestNodeNotAnswering: a node that does not answer the scrape (stopped,
// or its loop stuck) shows as huddle_up 0, not as an error.
func TestNodeNotAnswering(t *testing.T) {
	code, _, body := scrape(t, Handler(New(source{err: errors.New("stopped")}, 4096), false), "/metrics", "")
	if code != 200 || !strings.Contains(body, "huddle_up 0\n") || strings.Contains(body, "huddle_messages_sent_total") {
		t.Fatalf("GET /metrics of a node that does not answer: %d\n%s", code, body)
	}
}

// TestPprofOnlyWhenAsked: /debug/pprof is served only with its own flag.
func TestPprofOnlyWhenAsked(t *testing.T) {
	e := New(source{err: errors.New("stopped")}, 0)
	if code, _, _ := scrape(t, Handler(e, false), "/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --metrics-pprof: %d, want 404", code)
	}
	if code, _, body := scrape(t, Handler(e, true), "/debug/pprof/", ""); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with --metrics-pprof: %d", code)
	}
}
