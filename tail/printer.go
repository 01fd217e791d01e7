package tail

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/util/duration"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// Printer writes payloads as table rows (table, wide), JSON lines (json), YAML
// documents (yaml) or kind/name lines (name). It is safe for the concurrent
// calls of several informers.
type Printer struct {
	mu      sync.Mutex
	o       Options
	widths  []int
	printed bool
}

// The table's fixed columns, as kubectl get -w would show them, and what wide adds.
var (
	tableColumns = []string{"TIME", "EVENT", "RESOURCE", "NAMESPACE", "NAME", "AGE", "CHANGED"}
	wideColumns  = []string{"UID", "RESOURCE-VERSION"}
)

// changedWidth is how much of the changed paths a table row shows (wide: all).
const changedWidth = 40

// NewPrinter returns a printer for o.
func NewPrinter(o Options) *Printer {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Printer{o: o}
	// Columns start as wide as their header, or as a typical value, and grow
	// when a longer value comes by: a stream cannot be measured in advance.
	p.widths = []int{len("15:04:05"), len("update"), len("RESOURCE"), 16, 28, 5, 24}
	for _, r := range o.Resources {
		p.widths[2] = max(p.widths[2], len(r.Name()))
	}
	if o.Output == "wide" {
		p.widths = append(p.widths, 36, 16)
	}
	for _, c := range o.Columns {
		p.widths = append(p.widths, max(len(c.Name), 8))
	}
	if o.ClusterColumn {
		p.widths = append([]int{len("CLUSTER")}, p.widths...)
	}
	return p
}

func (p *Printer) tabular() bool {
	return p.o.Output == "table" || p.o.Output == "wide" || p.o.Output == ""
}

// Header writes the table header; other outputs have none, nor has a table
// with NoHeaders.
func (p *Printer) Header() error {
	if !p.tabular() || p.o.NoHeaders {
		return nil
	}
	cells := slices.Clone(tableColumns)
	if p.o.Output == "wide" {
		cells = append(cells, wideColumns...)
	}
	for _, c := range p.o.Columns {
		cells = append(cells, strings.ToUpper(c.Name))
	}
	if p.o.ClusterColumn {
		cells = append([]string{"CLUSTER"}, cells...)
	}
	return p.row(cells)
}

// Print writes one payload.
func (p *Printer) Print(pl *event.Payload) error {
	switch p.o.Output {
	case "json":
		b, err := payload.Marshal(pl) // "<redacted>" as written, as run's log action writes it
		if err != nil {
			return err
		}
		return p.write(append(b, '\n'))
	case "yaml":
		b, err := json.Marshal(pl)
		if err == nil {
			b, err = sigsyaml.JSONToYAML(b)
		}
		if err != nil {
			return err
		}
		return p.write(append([]byte("---\n"), b...))
	case "name":
		kind := strings.ToLower(pl.Resource.Kind)
		if pl.Resource.Group != "" {
			kind += "." + pl.Resource.Group
		}
		return p.write([]byte(printable(kind+"/"+pl.Name) + "\n"))
	}
	return p.row(p.cells(pl))
}

func (p *Printer) write(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.o.Out.Write(b)
	return err
}

// cells are a payload's table row.
func (p *Printer) cells(pl *event.Payload) []string {
	ns := pl.Namespace
	if ns == "" {
		ns = "-"
	}
	age := "<unknown>"
	if ts, err := time.Parse(time.RFC3339, gjson.GetBytes(pl.Object, "metadata.creationTimestamp").Str); err == nil {
		age = duration.HumanDuration(p.o.Now().Sub(ts))
	}
	at := p.o.Now()
	if t, err := time.Parse(event.TimeFormat, pl.Time); err == nil {
		at = t
	}
	changed := strings.Join(pl.Changed, ",")
	if changed == "" {
		changed = "-"
	} else if len(changed) > changedWidth && p.o.Output != "wide" {
		changed = changed[:changedWidth-1] + "…"
	}
	loc := p.o.Location
	if loc == nil {
		loc = time.Local
	}
	cells := []string{at.In(loc).Format("15:04:05"), string(pl.Type), pl.Resource.Name(), ns, pl.Name, age, changed}
	if p.o.Output == "wide" {
		cells = append(cells, pl.UID, pl.ResourceVersion)
	}
	for _, c := range p.o.Columns {
		cells = append(cells, cell(pl.Fields[c.Name]))
	}
	if p.o.ClusterColumn {
		cells = append([]string{pl.Cluster}, cells...)
	}
	return cells
}

func cell(raw json.RawMessage) string {
	r := gjson.ParseBytes(raw)
	switch {
	case len(raw) == 0 || r.Type == gjson.Null:
		return "<none>"
	case r.Type == gjson.String:
		return r.Str
	}
	return r.Raw
}

func (p *Printer) row(cells []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for i, c := range cells {
		c = printable(c)
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		n := utf8.RuneCountInString(c)
		p.widths[i] = max(p.widths[i], n)
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", p.widths[i]-n+3))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(p.o.Out, b.String())
	return err
}
