package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// RemoteWriteJob is the job label of the series loadlab pushes by
// remote-write (a scrape gets its job from the scraper's configuration).
const RemoteWriteJob = "loadlab"

// WriteRequest turns a snapshot into a remote-write (1.0) request: every
// series at the snapshot's time, histograms as their classic _bucket, _sum
// and _count series, labelled job="loadlab" and instance=HOST.
func WriteRequest(s Snapshot, instance string) *prompb.WriteRequest {
	ts := s.Time.UnixMilli()
	req := &prompb.WriteRequest{}
	add := func(name string, f Family, values []string, extra []prompb.Label, v float64) {
		labels := []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: RemoteWriteJob}, {Name: "instance", Value: instance}}
		for i, l := range f.Labels {
			labels = append(labels, prompb.Label{Name: l, Value: values[i]})
		}
		labels = append(labels, extra...)
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: v, Timestamp: ts}}})
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
		}
	}
	return req
}

// remoteWriteSender posts snapshots to a remote-write receiver: protobuf,
// snappy-compressed, as the remote-write 1.0 specification says.
func remoteWriteSender(url string) sender {
	instance, _ := os.Hostname()
	if instance == "" {
		instance = "loadlab" // an empty label is no label: the series would lose it
	}
	client := &http.Client{}
	return func(ctx context.Context, s Snapshot) error {
		data, err := WriteRequest(s, instance).Marshal()
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, data)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("User-Agent", "loadlab")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s answered %s: %s", url, resp.Status, bytes.TrimSpace(body))
		}
		return nil
	}
}
