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

// reservedHeader reports whether the header k is one dynwatch sets; its value
// is neither expanded nor sent.
func reservedHeader(k string) bool {
	return strings.HasPrefix(strings.ToLower(k), strings.ToLower(ReservedHeaderPrefix))
}

// validateHeaders checks webhook.headers' names, and reports the unset
// variables of their values.
func (w *WebhookSpec) validateHeaders(v *validator, p string) {
	for _, k := range slices.Sorted(maps.Keys(w.Headers)) {
		if reservedHeader(k) {
			v.errf(p+"."+k, "%s* headers are set by dynwatch for every delivery", ReservedHeaderPrefix)
			continue
		}
		v.reportEnv(p + "." + k)
	}
}
