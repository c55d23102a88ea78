package lineproto

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// corpusCase is one decode case of InfluxData's line-protocol corpus
// (lineprotocol/testdata/corpus.json of github.com/influxdata/line-protocol/v2,
// MIT): an input and the answer InfluxDB's reference decoder gives.
type corpusCase struct {
	Input struct {
		Key         string          `json:"key"`
		Text        json.RawMessage `json:"text"` // a string, or {"binary": base64}
		DefaultTime int64           `json:"defaultTime"`
		Precision   string          `json:"precision"`
	} `json:"input"`
	Output struct {
		Error  string `json:"error"`
		Result []struct {
			Time int64  `json:"time"`
			Name string `json:"name"`
			Tags []struct {
				Key, Value string
			} `json:"tags"`
			Fields []struct {
				Key   string                     `json:"key"`
				Value map[string]json.RawMessage `json:"value"`
			} `json:"fields"`
		} `json:"result"`
	} `json:"output"`
}

// corpusPath finds the corpus in the module cache, where the module
// tsdb's parser is built on brought it (go list answers from go.mod).
func corpusPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/influxdata/line-protocol/v2").Output()
	if err != nil {
		t.Fatalf("locating the line-protocol module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "lineprotocol", "testdata", "corpus.json")
}

// TestInfluxDataCorpus parses every decode case of InfluxData's corpus
// and compares with the reference: the same inputs refused, the same
// points (measurement, tags, typed field values, time at tsdb's
// microsecond resolution) from the accepted ones. Where tsdb stays
// stricter (unsigned integers above 2^63-1, which a bigint column cannot
// hold; NUL and other text PostgreSQL cannot store; duplicate tag keys)
// the case counts as a disagreement; at least 98 % must agree.
func TestInfluxDataCorpus(t *testing.T) {
	data, err := os.ReadFile(corpusPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct {
		Decode map[string]corpusCase `json:"decode"`
	}
	if err := json.Unmarshal(data, &corpus); err != nil {
		t.Fatal(err)
	}
	precisions := map[string]string{"1ns": "ns", "1µs": "us", "1ms": "ms", "1s": "s"}
	var agree int
	var differ []string
	keys := make([]string, 0, len(corpus.Decode))
	for k := range corpus.Decode {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := corpus.Decode[k]
		var text string
		if err := json.Unmarshal(c.Input.Text, &text); err != nil {
			var bin struct{ Binary string }
			if err := json.Unmarshal(c.Input.Text, &bin); err != nil {
				t.Fatalf("%s: input %s", k, c.Input.Text)
			}
			b, err := base64.StdEncoding.DecodeString(bin.Binary)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			text = string(b)
		}
		prec, ok := precisions[c.Input.Precision]
		if !ok {
			t.Fatalf("%s: precision %q", k, c.Input.Precision)
		}
		pts, bad, err := Parse([]byte(text), prec, time.Unix(0, c.Input.DefaultTime))
		samePlainReading(t, []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		why := compareCorpus(c, pts, bad)
		if why == "" {
			agree++
			continue
		}
		differ = append(differ, fmt.Sprintf("%s %q: %s", k, text, why))
	}
	share := 100 * float64(agree) / float64(len(keys))
	t.Logf("InfluxData's corpus: %d of %d decode cases agree (%.2f %%)", agree, len(keys), share)
	for i, d := range differ {
		if i == 40 {
			t.Logf("… and %d more", len(differ)-i)
			break
		}
		t.Log(d)
	}
	if share < 98 {
		t.Errorf("%.2f %% of the corpus agrees, want at least 98 %%", share)
	}
}

// compareCorpus says how tsdb's parse differs from the case's answer, or
// "" if it does not.
func compareCorpus(c corpusCase, pts []Point, bad []*ParseError) string {
	if c.Output.Error != "" {
		if len(bad) == 0 {
			return fmt.Sprintf("accepted; the reference refuses: %s", c.Output.Error)
		}
		return ""
	}
	if len(bad) > 0 {
		return fmt.Sprintf("refused (%s); the reference accepts", bad[0].Msg)
	}
	if len(pts) != len(c.Output.Result) {
		return fmt.Sprintf("%d points, the reference %d", len(pts), len(c.Output.Result))
	}
	for i, want := range c.Output.Result {
		p := pts[i]
		micros := want.Time / 1000
		if want.Time%1000 != 0 && want.Time < 0 {
			micros--
		}
		if p.Measurement != want.Name || p.Micros != micros || len(p.Tags) != len(want.Tags) || len(p.Fields) != len(want.Fields) {
			return fmt.Sprintf("point %d: %q %v %d fields at %d, the reference %q %v %d fields at %d", i, p.Measurement, tagMap(p), len(p.Fields), p.Micros, want.Name, want.Tags, len(want.Fields), micros)
		}
		for _, tag := range want.Tags {
			if v, ok := p.Tag(tag.Key); !ok || v != tag.Value {
				return fmt.Sprintf("point %d: tag %q is %q, the reference %q", i, tag.Key, v, tag.Value)
			}
		}
		for j, wf := range want.Fields {
			f := p.Fields[j]
			if f.Key != wf.Key {
				return fmt.Sprintf("point %d: field %d is %q, the reference %q", i, j, f.Key, wf.Key)
			}
			if why := compareValue(f, wf.Value); why != "" {
				return fmt.Sprintf("point %d: field %q: %s", i, f.Key, why)
			}
		}
	}
	return ""
}

// compareValue compares a parsed field with the reference's typed value.
func compareValue(f Field, want map[string]json.RawMessage) string {
	for kind, raw := range want {
		var ok bool
		switch kind {
		case "float":
			var x float64
			ok = json.Unmarshal(raw, &x) == nil && f.Kind == 'f' && (f.F == x || math.IsNaN(x) && math.IsNaN(f.F))
		case "int", "uint":
			// tsdb keeps unsigned values (up to 2^63-1) in bigint columns.
			var x int64
			ok = json.Unmarshal(raw, &x) == nil && f.Kind == 'i' && f.I == x
		case "bool":
			var x bool
			ok = json.Unmarshal(raw, &x) == nil && f.Kind == 'b' && f.B == x
		case "string":
			var x string
			ok = json.Unmarshal(raw, &x) == nil && f.Kind == 's' && f.S == x
		}
		if !ok {
			return fmt.Sprintf("%c %v %d %v %q, the reference %s %s", f.Kind, f.F, f.I, f.B, f.S, kind, raw)
		}
	}
	return ""
}
