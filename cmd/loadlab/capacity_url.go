package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/loadlab/loadlab/internal/plan"
)

// capacityURLFlags are capacity's quick form: --url URL --rate R searches
// one request's capacity without a plan file.
type capacityURLFlags struct {
	url     urlFlag
	rate    rateFlag
	method  methodFlag
	headers headerFlag
	body    string
	maxVUs  int
}

// capacityURLSource names the plan made from the flags in its errors.
const capacityURLSource = "--url"

// urlPlan writes the plan that capacity --url stands for: one step, the
// request, under an open load at --rate with at most --max-vus journeys in
// flight. It is read by plan.Parse like any plan file, so the search has
// one route to a workload and one fingerprint.
func (f *capacityURLFlags) urlPlan() ([]byte, error) {
	u := f.url.url
	rate := "10/s"
	if f.rate.rate != nil {
		rate = f.rate.text
	}
	texts := []string{u.String(), f.body}
	for _, h := range f.headers.headers {
		texts = append(texts, h.Name, h.Value)
	}
	for _, s := range texts {
		if strings.Contains(s, "{{") {
			return nil, errors.New("capacity: --url, -H and --body are sent as given, and {{ would be a template: write a plan file for templates")
		}
	}
	step := map[string]any{strings.ToLower(f.method.method): u.RequestURI()}
	if len(f.headers.headers) > 0 {
		h := map[string]string{}
		for _, hd := range f.headers.headers {
			h[hd.Name] = hd.Value
		}
		step["headers"] = h
	}
	if f.body != "" {
		step["body"] = f.body
	}
	name := safeName(u.Host)
	p := map[string]any{
		"name":   name,
		"target": u.Scheme + "://" + u.Host,
		"steps":  []any{step},
		// Each step runs for its own time (--step-max at most); the
		// plan's duration is only what a plan must say.
		"load": map[string]any{"open": map[string]any{"rate": rate, "max_vus": f.maxVUs, "duration": "1m"}},
	}
	if u.User != nil {
		return nil, errors.New("capacity: --url with credentials: give them as -H 'Authorization: ...', or write a plan file")
	}
	// JSON is YAML: the plan's own reader takes it.
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	return data, nil
}

// loadURLPlan reads the plan of capacity --url.
func loadURLPlan(f *capacityURLFlags, opts plan.Options) (*plan.Plan, error) {
	data, err := f.urlPlan()
	if err != nil {
		return nil, err
	}
	return plan.Parse(capacityURLSource, data, opts)
}
