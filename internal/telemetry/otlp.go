package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// ResourceMetrics turns a snapshot into OpenTelemetry metric data, cumulative
// from the command's start: the names are the Prometheus ones less
// _total, the unit apart.
func ResourceMetrics(s Snapshot) *metricdata.ResourceMetrics {
	var ms []metricdata.Metrics
	for _, f := range Families(s) {
		attrs := func(ser Series) attribute.Set {
			kv := make([]attribute.KeyValue, len(f.Labels))
			for i, l := range f.Labels {
				kv[i] = attribute.String(l, ser.Values[i])
			}
			return attribute.NewSet(kv...)
		}
		m := metricdata.Metrics{Name: strings.TrimSuffix(f.Name, "_total"), Description: f.Help, Unit: f.Unit}
		switch f.Kind {
		case Counter:
			sum := metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
			for _, ser := range f.Series {
				sum.DataPoints = append(sum.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(ser), StartTime: s.Start, Time: s.Time, Value: ser.Value})
			}
			m.Data = sum
		case Gauge:
			g := metricdata.Gauge[float64]{}
			for _, ser := range f.Series {
				g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(ser), StartTime: s.Start, Time: s.Time, Value: ser.Value})
			}
			m.Data = g
		case Histogram:
			h := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
			for _, ser := range f.Series {
				h.DataPoints = append(h.DataPoints, metricdata.HistogramDataPoint[float64]{
					Attributes: attrs(ser), StartTime: s.Start, Time: s.Time,
					Count: ser.Count, Sum: ser.Sum, Bounds: Bounds[:], BucketCounts: append([]uint64(nil), ser.Buckets...),
				})
			}
			m.Data = h
		}
		ms = append(ms, m)
	}
	return &metricdata.ResourceMetrics{
		Resource:     resource.NewSchemaless(semconv.ServiceName("loadlab")),
		ScopeMetrics: []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: "github.com/loadlab/loadlab"}, Metrics: ms}},
	}
}

// otlpSender exports snapshots with the OpenTelemetry SDK's OTLP/HTTP
// exporter; its own retries are off, since the pusher's queue bounds what
// waits and the next push carries every count anyway.
func otlpSender(url string) (sender, error) {
	exp, err := otlpmetrichttp.New(context.Background(),
		otlpmetrichttp.WithEndpointURL(url),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
		otlpmetrichttp.WithTimeout(pushTimeout))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, s Snapshot) error { return exp.Export(ctx, ResourceMetrics(s)) }, nil
}
