package action

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// A group formed again with another member (after a late acknowledgement,
// a kill -9 or a reload) holds other events, so nothing a receiver may
// drop duplicates by names both: not the delivery key (groupkey_test.go),
// and not the event id a webhook request (X-Dynwatch-Event-Id) or a command
// (DYNWATCH_EVENT_ID) gets either. The payload's id "is stable so receivers
// can drop duplicates": a receiver of one rule that drops a request whose
// event id it has seen would drop [cm0 cm1 cm2] after [cm0 cm1], and cm2
// with it. An ungrouped delivery keeps its event's id.
func TestReformedGroupRepeatsNoEventID(t *testing.T) {
	t.Parallel()
	now := newFakeClock().Now()
	cm := func(i int) *event.Delivery { return gdelivery("ns", fmt.Sprint("cm", i), 0, event.Add, now) }
	group := func(ms ...*event.Delivery) *event.Delivery {
		t.Helper()
		g, err := event.NewGroupDelivery(map[string]string{"rule": "r"}, ms)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	sends := []*event.Delivery{group(cm(0), cm(1)), group(cm(0), cm(1), cm(2)), cm(3)}

	t.Run("webhook", func(t *testing.T) {
		var (
			mu  sync.Mutex
			ids []string
		)
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			mu.Lock()
			ids = append(ids, r.Header.Get("X-Dynwatch-Event-Id"))
			mu.Unlock()
		}))
		defer srv.Close()
		w := webhook(t, fmt.Sprintf(`{url: %q}`, srv.URL))
		for _, d := range sends {
			if err := w.Send(context.Background(), d); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		checkEventIDs(t, "X-Dynwatch-Event-Id", ids, sends)
	})

	t.Run("exec", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ids")
		x := buildAction(t, fmt.Sprintf(`exec: {command: ["/bin/sh", "-c", "echo \"[$DYNWATCH_EVENT_ID]\" >> %s"]}`, out))
		for _, d := range sends {
			if err := x.Send(context.Background(), d); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var ids []string
		for sc := bufio.NewScanner(f); sc.Scan(); {
			ids = append(ids, strings.Trim(sc.Text(), "[]"))
		}
		checkEventIDs(t, "DYNWATCH_EVENT_ID", ids, sends)
	})
}

// checkEventIDs reports an id that two of sends (with other events) carry,
// or an ungrouped delivery whose id is not its event's.
func checkEventIDs(t *testing.T, what string, ids []string, sends []*event.Delivery) {
	t.Helper()
	if len(ids) != len(sends) {
		t.Fatalf("%d %s seen for %d deliveries", len(ids), what, len(sends))
	}
	seen := map[string]int{}
	for i, id := range ids {
		d := sends[i]
		if d.Group == nil {
			if id != d.Payload.ID {
				t.Errorf("ungrouped delivery %d: %s %q, want its event's %q", i, what, id, d.Payload.ID)
			}
			continue
		}
		if j, dup := seen[id]; dup && id != "" {
			t.Errorf("grouped deliveries %d (%d events) and %d (%d events) both carry %s %q: a receiver that drops what it has seen drops the second, and its new events",
				j, len(sends[j].Members), i, len(d.Members), what, id)
		}
		seen[id] = i
	}
}
