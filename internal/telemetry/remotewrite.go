package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"

	"github.com/loadlab/loadlab/internal/metrics"
)

// RemoteWriteJob is the job label of the series loadlab pushes by
// remote-write (a scrape gets its job from the scraper's configuration).
const RemoteWriteJob = "loadlab"

// WriteRequest turns a snapshot into a remote-write (1.0) request: every
// series at the snapshot's time, histograms as their classic _bucket, _sum
// and _count series, labelled job="loadlab" and instance=HOST. With native,
// each latency histogram is also sent as a native histogram (schema
// metrics.NativeSchema) under the family's own name.
func WriteRequest(s Snapshot, instance string, native bool) *prompb.WriteRequest {
	ts := s.Time.UnixMilli()
	req := &prompb.WriteRequest{}
	labelsOf := func(name string, f Family, values []string, extra []prompb.Label) []prompb.Label {
		labels := []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: RemoteWriteJob}, {Name: "instance", Value: instance}}
		for i, l := range f.Labels {
			labels = append(labels, prompb.Label{Name: l, Value: values[i]})
		}
		labels = append(labels, extra...)
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
		return labels
	}
	add := func(name string, f Family, values []string, extra []prompb.Label, v float64) {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labelsOf(name, f, values, extra), Samples: []prompb.Sample{{Value: v, Timestamp: ts}}})
	}
	for _, f := range Families(s) {
		typ := prompb.MetricMetadata_GAUGE
		switch f.Kind {
		case Counter:
			typ = prompb.MetricMetadata_COUNTER
		case Histogram:
			typ = prompb.MetricMetadata_HISTOGRAM
		}
		req.Metadata = append(req.Metadata, prompb.MetricMetadata{Type: typ, MetricFamilyName: f.Name, Help: f.Help})
		for _, ser := range f.Series {
			if f.Kind != Histogram {
				add(f.Name, f, ser.Values, nil, ser.Value)
				continue
			}
			var n uint64
			for i, b := range Bounds {
				n += ser.Buckets[i]
				add(f.Name+"_bucket", f, ser.Values, []prompb.Label{{Name: "le", Value: strconv.FormatFloat(b, 'g', -1, 64)}}, float64(n))
			}
			add(f.Name+"_bucket", f, ser.Values, []prompb.Label{{Name: "le", Value: "+Inf"}}, float64(ser.Count))
			add(f.Name+"_sum", f, ser.Values, nil, ser.Sum)
			add(f.Name+"_count", f, ser.Values, nil, float64(ser.Count))
			if native && ser.Native != nil {
				h := NativeHistogram(ser)
				req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labelsOf(f.Name, f, ser.Values, nil), Histograms: []prompb.Histogram{prompb.FromIntHistogram(ts, h)}})
			}
		}
	}
	return req
}

// NativeHistogram is a histogram series' native buckets as a Prometheus
// native histogram: schema metrics.NativeSchema, the zero bucket holding
// the latencies of 0 (its threshold the smallest, 2^-128), spans over the
// buckets that hold any (a gap of up to two empty buckets stays inside a
// span, as client_golang does), counts as deltas.
func NativeHistogram(ser Series) *histogram.Histogram {
	h := &histogram.Histogram{
		CounterResetHint: histogram.UnknownCounterReset,
		Schema:           metrics.NativeSchema,
		ZeroThreshold:    math.Ldexp(0.5, -127), // 2^-128, client_golang's default
		ZeroCount:        ser.NativeZero,
		Count:            ser.NativeZero,
		Sum:              ser.Sum,
	}
	var prev int64 // the last bucket's count, for the deltas
	last := 0      // index of the last bucket put in a span
	for i, n := range ser.Native {
		if n == 0 {
			continue
		}
		h.Count += n
		switch gap := i - last - 1; {
		case len(h.PositiveSpans) == 0:
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: int32(metrics.NativeMin + i), Length: 1})
		case gap <= 2:
			for range gap { // empty buckets inside the span
				h.PositiveBuckets = append(h.PositiveBuckets, -prev)
				prev = 0
			}
			h.PositiveSpans[len(h.PositiveSpans)-1].Length += uint32(gap) + 1
		default:
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: int32(gap), Length: 1})
		}
		h.PositiveBuckets = append(h.PositiveBuckets, int64(n)-prev)
		prev, last = int64(n), i
	}
	return h
}

// remoteWriter posts snapshots to a remote-write receiver: protobuf,
// snappy-compressed, as the remote-write 1.0 specification says. With
// native, the latency histograms go as native histograms as well; a
// receiver that refuses them (a Prometheus without
// --enable-feature=native-histograms answers "native histograms are
// disabled") gets the classic series alone from then on, and the summary
// says so.
type remoteWriter struct {
	url, instance string
	client        *http.Client
	native        bool // only sendAll's goroutine calls send
	mu            sync.Mutex
	refused       string
}

func newRemoteWriter(url string, native bool) *remoteWriter {
	instance, _ := os.Hostname()
	if instance == "" {
		instance = "loadlab" // an empty label is no label: the series would lose it
	}
	return &remoteWriter{url: url, instance: instance, client: &http.Client{}, native: native}
}

func (w *remoteWriter) send(ctx context.Context, s Snapshot) error {
	err := w.post(ctx, s)
	var refused *refusedError
	if w.native && errors.As(err, &refused) && strings.Contains(strings.ToLower(refused.body), "native histogram") {
		w.native = false
		w.mu.Lock()
		w.refused = fmt.Sprintf("the receiver refused native histograms (%s: %s), so classic histograms only were sent after the first", refused.status, refused.body)
		w.mu.Unlock()
		return w.post(ctx, s)
	}
	return err
}

func (w *remoteWriter) note() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

// refusedError is a receiver's answer other than 2xx.
type refusedError struct{ url, status, body string }

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s answered %s: %s", e.url, e.status, e.body)
}

func (w *remoteWriter) post(ctx context.Context, s Snapshot) error {
	data, err := WriteRequest(s, w.instance, w.native).Marshal()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(snappy.Encode(nil, data)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "loadlab")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return &refusedError{url: w.url, status: resp.Status, body: string(bytes.TrimSpace(body))}
	}
	return nil
}
