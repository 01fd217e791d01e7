package config

import (
	"maps"
	"slices"
	"strings"
)

// ReservedHeaderPrefix starts the names of the headers dynwatch sets on
// every webhook request (X-Dynwatch-Delivery-Id, X-Dynwatch-Event-Id): a
// constant one from headers would make a receiver that drops duplicates drop
// every event after the first, so headers cannot set them.
const ReservedHeaderPrefix = "X-Dynwatch-"

// validateHeaders checks webhook.headers' names and expands ${VAR} in their
// values.
func (w *WebhookSpec) validateHeaders(v *validator, p string) {
	for _, k := range slices.Sorted(maps.Keys(w.Headers)) {
		if strings.HasPrefix(strings.ToLower(k), strings.ToLower(ReservedHeaderPrefix)) {
			v.errf(p+"."+k, "%s* headers are set by dynwatch for every delivery", ReservedHeaderPrefix)
			continue
		}
		w.Headers[k] = expandEnv(v, p+"."+k, w.Headers[k])
	}
}
