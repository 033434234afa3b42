// promtext reads the Prometheus text exposition format on stdin with Prometheus's own parser
// (github.com/prometheus/common/expfmt, the one the node exporter's textfile collector and the
// Prometheus server use) and prints what it read as JSON, so the tests judge the metrics file
// by that parser and no hand-written one. Test tooling only: nothing places it on a host.
//
// Output: {"families":[{"name","help","type","metrics":[{"labels":{...},"value":N}]}]}, the
// families sorted by name, each family's metrics in the order of the input; value is null for
// summaries and histograms (the tests read gauges). Input the parser refuses, or one label set
// twice in a family (a scrape refuses it, the parser lets it through), exits 1 with the reason
// on stderr.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type metric struct {
	Labels map[string]string `json:"labels"`
	Value  *float64          `json:"value"`
}

type family struct {
	Name    string   `json:"name"`
	Help    string   `json:"help"`
	Type    string   `json:"type"`
	Metrics []metric `json:"metrics"`
}

func main() {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	parsed, err := parser.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fail("%v", err)
	}
	names := make([]string, 0, len(parsed))
	for name := range parsed {
		names = append(names, name)
	}
	sort.Strings(names)
	out := struct {
		Families []family `json:"families"`
	}{Families: []family{}}
	for _, name := range names {
		mf := parsed[name]
		f := family{Name: name, Help: mf.GetHelp(), Type: mf.GetType().String(), Metrics: []metric{}}
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, pair := range m.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			key, _ := json.Marshal(labels) // map keys sorted: one key per label set
			if seen[string(key)] {
				fail("%s: the label set %s appears twice", name, key)
			}
			seen[string(key)] = true
			f.Metrics = append(f.Metrics, metric{Labels: labels, Value: value(name, mf.GetType(), m)})
		}
		out.Families = append(out.Families, f)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("%v", err)
	}
}

// value is a gauge's, counter's or untyped sample's value; JSON has no NaN or infinity.
func value(name string, t dto.MetricType, m *dto.Metric) *float64 {
	var v float64
	switch t {
	case dto.MetricType_GAUGE:
		v = m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		v = m.GetCounter().GetValue()
	case dto.MetricType_UNTYPED:
		v = m.GetUntyped().GetValue()
	default:
		return nil
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		fail("%s: value %v has no JSON form", name, v)
	}
	return &v
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "promtext: "+format+"\n", args...)
	os.Exit(1)
}
