package tail

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
)

// --where actor.manager=… is missing on every object of the initial list,
// as it must be: an add has no actor, only an update or a delete does. The
// probe must not say that nothing can match it (it will, on the first
// update), while a path that no object has is still reported, and health.*,
// which every object has, is not.
func TestProbeActorWhereIsNoMissingPath(t *testing.T) {
	t.Parallel()
	where := []config.ConditionSpec{{Path: "actor.manager", Op: "eq"}, {Path: "health.status", Op: "eq"}, {Path: "spec.nothere", Op: "eq"}}
	p := newProbe(where, nil, "")
	hc, _ := health.New(nil)
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	for _, name := range []string{"a", "b"} {
		ev := event.New(event.Add, res, []byte(`{"metadata":{"name":"`+name+`","namespace":"n","uid":"u`+name+`","resourceVersion":"1"}}`), nil, time.Now())
		ev.Origin = event.InitialList
		ev.Deriver = hc
		p.observe(ev)
	}
	var buf bytes.Buffer
	p.report(slog.New(slog.NewTextHandler(&buf, nil)))
	out := buf.String()
	if strings.Contains(out, "path=actor.manager") {
		t.Errorf("the probe says --where actor.manager cannot match, yet every update has an actor:\n%s", out)
	}
	if strings.Contains(out, "path=health.status") {
		t.Errorf("the probe says health.status is missing:\n%s", out)
	}
	if !strings.Contains(out, "path=spec.nothere") {
		t.Errorf("the probe no longer reports a path no object has:\n%s", out)
	}
}
