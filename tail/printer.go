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
//
// A table's columns are as wide as the widest cell printed so far, as
// kubectl's tabwriter sizes a batch of rows: while the printer is held (Hold),
// its rows (the header and the initial list) wait and are sized together
// when it is released; after that, a longer cell widens its column for the
// rows that follow.
type Printer struct {
	mu     sync.Mutex
	o      Options
	widths []int
	holds  int        // Hold calls not yet Released
	held   [][]string // rows waiting for the last Release
}

// The table's fixed columns, as kubectl get -w would show them, and what wide adds.
var (
	tableColumns = []string{"TIME", "EVENT", "RESOURCE", "NAMESPACE", "NAME", "AGE", "CHANGED"}
	wideColumns  = []string{"UID", "RESOURCE-VERSION", "ACTOR"}
)

// changedWidth is how much of the changed paths a table row shows (wide: all).
const changedWidth = 40

// NewPrinter returns a printer for o.
func NewPrinter(o Options) *Printer {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Printer{o: o}
	p.widths = make([]int, len(p.headerCells()))
	return p
}

// Hold makes table rows wait until as many Release calls as Holds, so that
// they are sized together. Other outputs are never held.
func (p *Printer) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holds++
}

// Release ends one Hold; the last one writes the rows held, every column as
// wide as its widest cell among them.
func (p *Printer) Release() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holds == 0 {
		return nil
	}
	if p.holds--; p.holds > 0 {
		return nil
	}
	for _, cells := range p.held {
		p.widen(cells)
	}
	var b strings.Builder
	for _, cells := range p.held {
		p.format(&b, cells)
	}
	p.held = nil
	_, err := io.WriteString(p.o.Out, b.String())
	return err
}

// discard drops the rows held and every Hold, writing nothing.
func (p *Printer) discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holds, p.held = 0, nil
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
	return p.row(p.headerCells())
}

func (p *Printer) headerCells() []string {
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
	return cells
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
	} else if r := []rune(changed); len(r) > changedWidth && p.o.Output != "wide" {
		changed = string(r[:changedWidth-1]) + "…"
	}
	loc := p.o.Location
	if loc == nil {
		loc = time.Local
	}
	cells := []string{at.In(loc).Format("15:04:05"), string(pl.Type), pl.Resource.Name(), ns, pl.Name, age, changed}
	if p.o.Output == "wide" {
		cells = append(cells, pl.UID, pl.ResourceVersion, actorCell(pl.Actor))
	}
	for _, c := range p.o.Columns {
		cells = append(cells, cell(pl.Fields[c.Name]))
	}
	if p.o.ClusterColumn {
		cells = append([]string{pl.Cluster}, cells...)
	}
	return cells
}

// actorCell is who made the change: the manager, and "(Apply)" after it
// for a server-side apply, whose manager its user names; "-" when not known
// (an add).
func actorCell(a *event.Actor) string {
	switch {
	case a == nil:
		return "-"
	case a.Operation == "Apply":
		return a.Manager + "(Apply)"
	}
	return a.Manager
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

// row writes a table row, or keeps it while the printer is held.
func (p *Printer) row(cells []string) error {
	clean := make([]string, len(cells))
	for i, c := range cells {
		clean[i] = printable(c)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holds > 0 {
		p.held = append(p.held, clean)
		return nil
	}
	p.widen(clean)
	var b strings.Builder
	p.format(&b, clean)
	_, err := io.WriteString(p.o.Out, b.String())
	return err
}

// widen makes each column (but the last, which is not padded) as wide as
// its cell in cells.
func (p *Printer) widen(cells []string) {
	for i, c := range cells[:len(cells)-1] {
		p.widths[i] = max(p.widths[i], utf8.RuneCountInString(c))
	}
}

// format writes cells as one line, each column padded to its width and
// three spaces, as kubectl's tabwriter pads them.
func (p *Printer) format(b *strings.Builder, cells []string) {
	for i, c := range cells {
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(c)+3))
		}
	}
	b.WriteByte('\n')
}
