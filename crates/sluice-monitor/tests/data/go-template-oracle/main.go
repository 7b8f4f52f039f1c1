// The oracle for src/notifier/template's tests: renders every case in
// ../go-template-cases.json with Go's own text/template over the fixture status the Rust
// tests use (src/notifier/template/mod.rs, tests::fixture) and writes what Go printed into
// each case's "go" field. Run it after adding a case:
//
//	cd crates/sluice-monitor/tests/data/go-template-oracle && go run . ../go-template-cases.json
//
// The types mirror Burrow's protocol package (field names, JSON tags, String and
// MarshalJSON methods) and the functions behave as Burrow's notifier helpers do, written
// here from their documented behaviour; topicsbystatus sorts its lists, which Go's map
// order otherwise leaves to chance. Times are UTC, as Sluice renders them.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"text/template"
	"time"
)

type StatusConstant int

var names = []string{"NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"}

func (c StatusConstant) String() string {
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return "UNKNOWN"
}
func (c StatusConstant) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

type Lag struct{ Value uint64 }

func (l Lag) MarshalJSON() ([]byte, error) { return json.Marshal(l.Value) }

type ConsumerOffset struct {
	Offset            int64 `json:"offset"`
	Order             int64 `json:"-"`
	Timestamp         int64 `json:"timestamp"`
	ObservedTimestamp int64 `json:"observedAt"`
	Lag               *Lag  `json:"lag"`
}
type PartitionStatus struct {
	Topic      string          `json:"topic"`
	Partition  int32           `json:"partition"`
	Owner      string          `json:"owner"`
	ClientID   string          `json:"client_id"`
	Status     StatusConstant  `json:"status"`
	Start      *ConsumerOffset `json:"start"`
	End        *ConsumerOffset `json:"end"`
	CurrentLag uint64          `json:"current_lag"`
	Complete   float32         `json:"complete"`
}
type ConsumerGroupStatus struct {
	Cluster         string             `json:"cluster"`
	Group           string             `json:"group"`
	Status          StatusConstant     `json:"status"`
	Complete        float32            `json:"complete"`
	Partitions      []*PartitionStatus `json:"partitions"`
	TotalPartitions int                `json:"partition_count"`
	Maxlag          *PartitionStatus   `json:"maxlag"`
	TotalLag        uint64             `json:"totallag"`
}

func off(o int64, ts int64, lag *Lag) *ConsumerOffset {
	return &ConsumerOffset{Offset: o, Order: o, Timestamp: ts, ObservedTimestamp: ts + 5, Lag: lag}
}

var funcs = template.FuncMap{
	"jsonencoder": func(v interface{}) string { b, _ := json.Marshal(v); return string(b) },
	"topicsbystatus": func(ps []*PartitionStatus) map[string][]string {
		m := map[string]map[string]bool{}
		for _, p := range ps {
			if m[p.Status.String()] == nil {
				m[p.Status.String()] = map[string]bool{}
			}
			m[p.Status.String()][p.Topic] = true
		}
		rv := map[string][]string{}
		for s, t := range m {
			for x := range t {
				rv[s] = append(rv[s], x)
			}
			sort.Strings(rv[s])
		}
		return rv
	},
	"partitioncounts": func(ps []*PartitionStatus) map[string]int {
		rv := map[string]int{"warn": 0, "stop": 0, "stall": 0, "rewind": 0, "unknown": 0}
		for _, p := range ps {
			switch p.Status {
			case 1:
			case 2:
				rv["warn"]++
			case 4:
				rv["stop"]++
			case 5:
				rv["stall"]++
			case 6:
				rv["rewind"]++
			default:
				rv["unknown"]++
			}
		}
		return rv
	},
	"add":      func(a, b int) int { return a + b },
	"minus":    func(a, b int) int { return a - b },
	"multiply": func(a, b int) int { return a * b },
	"divide":   func(a, b int) int { return a / b },
	"maxlag": func(p *PartitionStatus) uint64 {
		if p == nil {
			return 0
		}
		return p.CurrentLag
	},
	"formattimestamp": func(ts int64, f string) string {
		return time.Unix(0, ts*int64(time.Millisecond)).UTC().Format(f)
	},
}

func main() {
	warn := &PartitionStatus{Topic: "orders", Partition: 0, Owner: "consumer-1/10.0.0.1", ClientID: "client-1", Status: 2,
		Start: off(100, 1351807000000, &Lag{5}), End: off(160, 1351807700000, &Lag{45}), CurrentLag: 50, Complete: 1.0}
	stop := &PartitionStatus{Topic: "payments", Partition: 3, Status: 4,
		Start: off(7, 1351806000000, nil), End: off(7, 1351806500000, &Lag{1200}), CurrentLag: 1250, Complete: 0.7}
	stopCopy := *stop
	status := ConsumerGroupStatus{Cluster: "local", Group: "billing", Status: 3, Complete: 0.5,
		Partitions: []*PartitionStatus{warn, stop}, TotalPartitions: 4, Maxlag: &stopCopy, TotalLag: 1300}
	extras := map[string]string{"api_key": "REDACTED", "app": "burrow", "tier": "STG", "fabric": "mydc"}
	data := struct {
		Cluster string
		Group   string
		ID      string
		Start   time.Time
		Extras  map[string]string
		Result  ConsumerGroupStatus
	}{"local", "billing", "7f1c6b1e-2f6d-4e0a-9b1e-1f2a3b4c5d6e", time.Unix(1351807721, 0).UTC(), extras, status}

	// The cases file: name -> {"template": source} or {"file": a Burrow template's name};
	// "go" is (re)written with what Go printed, or "ERROR: " and Go's error.
	path := os.Args[1]
	raw, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	cases := map[string]map[string]string{}
	if err := json.Unmarshal(raw, &cases); err != nil {
		panic(err)
	}
	for name, c := range cases {
		src := c["template"]
		if file, ok := c["file"]; ok {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "burrow-templates", file))
			if err != nil {
				panic(err)
			}
			src = string(b)
		}
		t, err := template.New(name).Funcs(funcs).Parse(src)
		if err == nil {
			var buf bytes.Buffer
			if err = t.Execute(&buf, data); err == nil {
				c["go"] = buf.String()
				continue
			}
		}
		c["go"] = "ERROR: " + err.Error()
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cases); err != nil {
		panic(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		panic(err)
	}
	fmt.Fprintln(os.Stderr, len(cases), "cases")
}
